"""What every tunable family's Tuner entry point runs: a KerasTuner random search over the
search space the family declares (its config.SEARCH_SPACE); the Tuner writes the best values,
and the Trainer applies them on top of the preset and its overrides (inputs.start_run)."""

import copy
import itertools
from typing import Callable, Sequence

import keras_tuner
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs
from tfx.components.tuner.component import TunerFnResult

from trainer_module.family import Axis, search_overrides
from trainer_module.training.inputs import Prepared, TrainerRun
from trainer_module.training.progress import Progress


class TrialProgress(Progress):
    """Progress of each trial, labelled `trial i/n`. KerasTuner deep-copies the callback for
    each trial; the copies share one search's trial counter."""

    def __init__(self, trials: int, *args, **kwargs):
        super().__init__("trial", *args, **kwargs)
        self.trials = trials
        self.trial_numbers = itertools.count(1)

    def __deepcopy__(self, memo):
        copied = copy.copy(self)  # its own attributes, the same counter
        memo[id(self)] = copied
        return copied

    def on_train_begin(self, logs=None):
        self.label = f"trial {next(self.trial_numbers)}/{self.trials}"
        self.step = self.first_step
        super().on_train_begin(logs)


def declare(hp: keras_tuner.HyperParameters, search_space: Sequence[Axis]) -> dict:
    """Declares the space on `hp`; returns this trial's value per axis."""
    values = {}
    for axis in search_space:
        if axis.choices:
            values[axis.name] = hp.Choice(axis.name, list(axis.choices))
        else:
            values[axis.name] = hp.Float(
                axis.name,
                axis.low,
                axis.high,
                step=axis.step,
                sampling="log" if axis.log else "linear",
            )
    return values


def tune(
    fn_args: FnArgs, prepare: Callable[[TrainerRun], Prepared], search_space: Sequence[Axis]
) -> TunerFnResult:
    """A random search of custom_config["trials"] trials; each trains for train_steps and is
    scored on eval_steps batches of the eval split by the family's objective."""
    prepared = prepare(TrainerRun.from_fn_args(fn_args))
    run = prepared.run

    def build(hp: keras_tuner.HyperParameters):
        config = prepared.config.replace(
            **search_overrides(search_space, declare(hp, search_space))
        )
        logging.info("Trial config %s", config)
        return prepared.build(config, run.train_steps)

    trials = int(run.custom_config["trials"])
    tuner = keras_tuner.RandomSearch(
        build,
        objective=keras_tuner.Objective(prepared.objective, direction="max"),
        max_trials=trials,
        seed=int(run.options.seed),
        directory=run.working_dir,
        project_name="search",
        overwrite=True,
    )
    return TunerFnResult(
        tuner=tuner,
        fit_kwargs={
            "x": prepared.train,
            "validation_data": prepared.evaluation,
            "epochs": 1,
            "steps_per_epoch": run.train_steps,
            "validation_steps": max(1, run.eval_steps),
            "callbacks": [TrialProgress(trials, run.train_steps, prepared.config.batch_size)],
            "verbose": 0,
        },
    )
