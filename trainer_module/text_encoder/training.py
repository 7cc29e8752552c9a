"""The text encoder classifier's run over Transform's output (prepare), and the Trainer's and
the Tuner's entry points: training/run_fn.py fits and exports what prepare returns."""

from absl import logging

from trainer_module.text_encoder import FAMILY
from trainer_module.text_encoder.model import build_model
from trainer_module.text_encoder.preprocessing import vocabulary_size
from trainer_module.text_encoder.serving import export, model_inputs
from trainer_module.training import wide_path
from trainer_module.training.inputs import Prepared, TrainerRun, start_run
from trainer_module.training.run_fn import trainer_entry_point, tuner_entry_point


def prepare(run: TrainerRun) -> Prepared:
    config, tf_transform_output, run = start_run(run, FAMILY)
    config = config.replace(vocab_size=vocabulary_size(tf_transform_output))
    logging.info("Text encoder config %s", config)

    datasets, train, evaluation, ratios = wide_path.text_classifier_data(
        run, tf_transform_output, model_inputs, config
    )
    return Prepared(
        run,
        config,
        tf_transform_output,
        train,
        evaluation,
        build=lambda c, steps: build_model(c, steps, ratios),
        objective="val_accuracy",
        export=lambda model, folder: export(model, tf_transform_output, folder),
        datasets=datasets,
        ngram_ratios=ratios,
    )


# The TFX Trainer's and Tuner's entry points (FAMILY.run_fn, FAMILY.tuner_fn).
run_fn = trainer_entry_point(prepare)
tuner_fn = tuner_entry_point(prepare, FAMILY.search_space)
