"""Trains the from-scratch Transformer classifier on Transform's output and exports it."""

import keras
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs

from trainer_module.models.presets import TextEncoderConfig, get_preset
from trainer_module.models.text_classifier import TransformerClassifier
from trainer_module.preprocessing.text import embedding_rows
from trainer_module.serving.text_classifier import export_text_classifier, token_ids
from trainer_module.training.history import fit_with_evaluations, write_history
from trainer_module.training.inputs import Prepared, make_dataset, start_run
from trainer_module.training.optimizers import adamw
from trainer_module.training.schedules import WarmupInverseSqrt


def build_model(config: TextEncoderConfig, vocab_rows: int, train_steps: int) -> keras.Model:
    model = TransformerClassifier.from_preset_config(config, vocab_rows)
    # Short runs (tests, the embedded corpus) still reach the peak rate: warm up for at most a
    # quarter of the steps.
    warmup = min(config.warmup_steps, max(1, train_steps // 4))
    model.compile(
        optimizer=adamw(WarmupInverseSqrt(config.peak_learning_rate, warmup), config.weight_decay),
        loss=keras.losses.CategoricalCrossentropy(from_logits=True,
                                                  label_smoothing=config.label_smoothing),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )
    model(keras.ops.zeros((1, config.max_length), dtype="int32"))  # build the weights
    return model


def prepare(fn_args: FnArgs) -> Prepared:
    config, tf_transform_output = start_run(fn_args, get_preset, "small")
    vocab_rows = embedding_rows(tf_transform_output)
    logging.info("Text classifier config %s, %d embedding rows", config, vocab_rows)
    train, evaluation = (
        make_dataset(fn_args, files, tf_transform_output, token_ids, config.batch_size,
                     config.num_classes, shuffle)
        for files, shuffle in ((fn_args.train_files, True), (fn_args.eval_files, False)))
    return Prepared(config, tf_transform_output, train, evaluation,
                    build=lambda c: build_model(c, vocab_rows, fn_args.train_steps),
                    objective="val_accuracy")


def train_and_export(fn_args: FnArgs) -> keras.Model:
    run = prepare(fn_args)
    model = run.build(run.config)
    history = fit_with_evaluations(model, run.train, run.evaluation, fn_args,
                                   run.config.evaluations)
    write_history(fn_args.model_run_dir, run.config.to_dict(), history.history,
                  vocab_rows=embedding_rows(run.tf_transform_output))
    export_text_classifier(model, run.tf_transform_output, fn_args.serving_model_dir)
    return model
