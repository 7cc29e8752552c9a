"""Fine-tunes a pretrained BERT classifier on Transform's output, in two phases, and exports it;
the Trainer's entry point (a pretrained backbone has no search space: no Tuner)."""

import math
import os
import time

import keras
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs

from trainer_module.bert import FAMILY
from trainer_module.bert.config import BertConfig
from trainer_module.bert.model import bert_classifier
from trainer_module.bert.preprocessing import VOCABULARY_NAME
from trainer_module.bert.serving import bert_inputs, export
from trainer_module.preprocessing.ngrams import ngram_ratios
from trainer_module.training import backup, wide_path
from trainer_module.training.history import LogEvaluations, throughput, write_history
from trainer_module.training.inputs import make_dataset, start_run
from trainer_module.training.optimizers import adamw
from trainer_module.training.progress import Progress
from trainer_module.training.run_fn import trainer_entry_point
from trainer_module.training.schedules import WarmupLinearDecay


def phases(config: BertConfig, train_steps: int) -> list:
    """(name, steps, learning rate or schedule, validation passes) of the phases that train:
    "head" (config.head_fraction of the steps, no validation), then "full"."""
    head_steps = int(train_steps * config.head_fraction)
    full_steps = train_steps - head_steps
    schedule = WarmupLinearDecay(
        config.learning_rate, int(full_steps * config.warmup_fraction), full_steps
    )
    return [
        (name, steps, rate, evaluations)
        for name, steps, rate, evaluations in (
            ("head", head_steps, config.head_learning_rate, 0),
            ("full", full_steps, schedule, max(1, min(config.evaluations, full_steps))),
        )
        if steps > 0
    ]


def train_and_export(fn_args: FnArgs) -> keras.Model:
    config, tf_transform_output = start_run(fn_args, FAMILY)

    def datasets(shuffle, epochs=None, files=fn_args.train_files):
        return make_dataset(
            fn_args,
            files,
            tf_transform_output,
            bert_inputs,
            config.batch_size,
            config.num_classes,
            shuffle,
            epochs,
        )

    train, evaluation = datasets(True), datasets(False, files=fn_args.eval_files)
    ratios = ngram_ratios(tf_transform_output) if config.ngram_buckets else None
    if wide_path.holds_out(config, fn_args.custom_config["train_examples"]):
        # The deep path trains outside the held-out slice.
        train = wide_path.split(train, config.holdout_percent, config.batch_size, holdout=False)
    model = bert_classifier(config, ratios)
    model.paths = bool(config.ngram_buckets)  # BERT on its own loss, each path reported
    vocabulary = tf_transform_output.vocabulary_size_by_name(VOCABULARY_NAME)
    if vocabulary > model.backbone.vocabulary_size:
        raise ValueError(
            f"the tokenizer's vocabulary has {vocabulary} pieces, more than the "
            f"backbone's {model.backbone.vocabulary_size} embeddings: "
            f"{config.backbone_preset} pairs a vocabulary with another model"
        )
    logging.info("BERT classifier config %s", config)

    history, started, resumed_from_step = {}, time.perf_counter(), 0
    for name, steps, learning_rate, evaluations in phases(config, fn_args.train_steps):
        model.train_phase(name)
        model.compile(
            optimizer=adamw(learning_rate, config.weight_decay),
            loss=keras.losses.CategoricalCrossentropy(from_logits=True),
            metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
        )
        intervals = max(1, evaluations)  # Keras "epochs": a backup after each
        steps_per_interval = math.ceil(steps / intervals)
        logging.info(
            "Phase %s: %d steps, %d trainable weights", name, steps, len(model.trainable_weights)
        )
        restore = backup.callback(fn_args, phase=name)  # a finished phase restores as done
        done = restore.finished_intervals() * steps_per_interval if restore else 0
        callbacks = [
            keras.callbacks.TensorBoard(log_dir=os.path.join(fn_args.model_run_dir, name)),
            LogEvaluations(intervals),
            Progress(
                f"BERT phase {name}",
                steps_per_interval * intervals,
                config.batch_size,
                first_step=done,
            ),
        ]
        if restore is not None:
            callbacks.insert(0, restore)
        result = model.fit(
            backup.continued(train, restore, steps_per_interval),
            steps_per_epoch=steps_per_interval,
            epochs=intervals,
            validation_data=evaluation if evaluations else None,
            validation_steps=max(1, fn_args.eval_steps or 1),
            callbacks=callbacks,
            verbose=0,
        )
        resumed_from_step += restore.resumed_from_step if restore else 0
        for key, values in result.history.items():
            history.setdefault(key, []).extend(float(v) for v in values)

    fit_seconds, paths = time.perf_counter() - started, {}
    if config.ngram_buckets:
        paths = wide_path.train_and_combine(
            model,
            config,
            datasets,
            evaluation,
            fn_args.eval_steps,
            fn_args.custom_config["train_examples"],
            ratios,
        )
    write_history(
        fn_args.model_run_dir,
        config.to_dict(),
        history,
        paths=paths or None,
        **throughput(
            fit_seconds,
            fn_args,
            config.batch_size,
            resumed_from_step=resumed_from_step,
        ),
    )
    export(model, tf_transform_output, fn_args.serving_model_dir)
    return model


# The TFX Trainer's entry point (FAMILY.run_fn).
run_fn = trainer_entry_point(train_and_export)
