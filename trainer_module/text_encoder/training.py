"""Trains the text encoder classifier on Transform's output and exports it; the Trainer's and
the Tuner's entry points."""

import keras
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs

from trainer_module.preprocessing.ngrams import ngram_ratios
from trainer_module.text_encoder import FAMILY
from trainer_module.text_encoder.model import build_model
from trainer_module.text_encoder.preprocessing import vocabulary_size
from trainer_module.text_encoder.serving import export, model_inputs
from trainer_module.training import wide_path
from trainer_module.training.history import fit_with_evaluations, throughput, write_history
from trainer_module.training.inputs import Prepared, make_dataset, start_run
from trainer_module.training.run_fn import trainer_entry_point, tuner_entry_point


def prepare(fn_args: FnArgs) -> Prepared:
    config, tf_transform_output = start_run(fn_args, FAMILY)
    config = config.replace(vocab_size=vocabulary_size(tf_transform_output))
    logging.info("Text encoder config %s", config)

    def datasets(shuffle, epochs=None, files=fn_args.train_files):
        return make_dataset(
            fn_args,
            files,
            tf_transform_output,
            model_inputs,
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
    return Prepared(
        config,
        tf_transform_output,
        train,
        evaluation,
        build=lambda c: build_model(c, fn_args.train_steps, ratios),
        objective="val_accuracy",
        datasets=datasets,
        ngram_ratios=ratios,
    )


def train_and_export(fn_args: FnArgs) -> keras.Model:
    prepared = prepare(fn_args)
    model = prepared.build(prepared.config)
    history = fit_with_evaluations(
        model,
        prepared.train,
        prepared.evaluation,
        fn_args,
        prepared.config.evaluations,
        prepared.config.batch_size,
    )
    paths = {}
    if prepared.config.ngram_buckets:
        paths = wide_path.train_and_combine(
            model,
            prepared.config,
            prepared.datasets,
            prepared.evaluation,
            fn_args.eval_steps,
            fn_args.custom_config["train_examples"],
            prepared.ngram_ratios,
        )
    write_history(
        fn_args.model_run_dir,
        prepared.config.to_dict(),
        history.history,
        paths=paths or None,
        **throughput(
            history.fit_seconds,
            fn_args,
            prepared.config.batch_size,
            resumed_from_step=history.resumed_from_step,
            warm_start=history.warm_start,
        ),
    )
    export(model, prepared.tf_transform_output, fn_args.serving_model_dir)
    return model


# The TFX Trainer's and Tuner's entry points (FAMILY.run_fn, FAMILY.tuner_fn).
run_fn = trainer_entry_point(train_and_export)
tuner_fn = tuner_entry_point(prepare, FAMILY.search_space)
