"""The optional Tuner's entry point: a KerasTuner random search over a small declared space.

The space has four axes (layers, d_model, learning rate, dropout), mapped onto each model
config's own fields; the Tuner writes the best values, and the Trainer applies them on top of
the preset and its overrides (inputs.start_run).
"""
import importlib
from typing import Any, Mapping

import keras_tuner
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs
from tfx.components.tuner.component import TunerFnResult

from trainer_module.training.run_fn import TRAINING_PACKAGE

LAYERS = (1, 2, 4)
D_MODEL = (64, 128, 256)  # every preset's head count divides each of these
LEARNING_RATE = (1e-4, 3e-3)  # sampled log-uniformly
DROPOUT = (0.0, 0.3, 0.1)  # min, max, step

# Config fields each axis sets, by config class.
_FIELDS = {
    "TextEncoderConfig": {"layers": ("num_layers",)},
    "VitConfig": {"layers": ("num_layers",)},
    "TranslatorConfig": {"layers": ("encoder_layers", "decoder_layers")},
}
_SHARED = {"d_model": ("d_model",), "learning_rate": ("peak_learning_rate",),
           "dropout": ("dropout",)}


def declare(hp: keras_tuner.HyperParameters) -> dict:
    """Declares the space on `hp`; returns this trial's value per axis."""
    return {"layers": hp.Choice("layers", list(LAYERS)),
            "d_model": hp.Choice("d_model", list(D_MODEL)),
            "learning_rate": hp.Float("learning_rate", *LEARNING_RATE, sampling="log"),
            "dropout": hp.Float("dropout", DROPOUT[0], DROPOUT[1], step=DROPOUT[2])}


def to_overrides(values: Mapping[str, Any], config) -> dict:
    """Config overrides for the axis `values` (a trial's, or the best ones the Tuner wrote)."""
    kind = type(config).__name__
    if kind not in _FIELDS:
        raise ValueError(f"{kind} declares no search space; tunable: {sorted(_FIELDS)}")
    fields = {**_SHARED, **_FIELDS[kind]}
    return {field: values[axis] for axis, names in fields.items() if axis in values
            for field in names}


def tuner_fn(fn_args: FnArgs) -> TunerFnResult:
    """TFX Tuner entry point (`Tuner(tuner_fn='trainer_module.training.tuning.tuner_fn')`).

    The training module custom_config names prepares the datasets and the model builder
    (`prepare(fn_args)`); each trial trains for train_steps and is scored on eval_steps
    batches of the eval split by the module's objective. custom_config["trials"] trials.
    """
    module = fn_args.custom_config.get("training_module", "")
    if not module.startswith(TRAINING_PACKAGE):
        raise ValueError(f"training_module must be a module of {TRAINING_PACKAGE[:-1]}, "
                         f"not {module!r}")
    prepared = importlib.import_module(module).prepare(fn_args)

    def build(hp: keras_tuner.HyperParameters):
        config = prepared.config.replace(**to_overrides(declare(hp), prepared.config))
        logging.info("Trial config %s", config)
        return prepared.build(config)

    tuner = keras_tuner.RandomSearch(
        build, objective=keras_tuner.Objective(prepared.objective, direction="max"),
        max_trials=int(fn_args.custom_config["trials"]),
        seed=int(fn_args.custom_config.get("seed", 0)),
        directory=fn_args.working_dir, project_name="search", overwrite=True)
    return TunerFnResult(tuner=tuner, fit_kwargs={
        "x": prepared.train, "validation_data": prepared.evaluation, "epochs": 1,
        "steps_per_epoch": fn_args.train_steps, "validation_steps": max(1, fn_args.eval_steps),
        "verbose": 0})
