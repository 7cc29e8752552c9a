"""The Trainer's plan and its time budget (training/plan.py)."""

import dataclasses
import json
import logging
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainer_module.training import plan
from trainer_module.training.inputs import Prepared
from trainer_module.training.progress import LOGGER
from trainer_module.training.schedules import WarmupLinearDecay


def batches(count: int = 64):
    x = np.random.default_rng(0).normal(size=(count, 4)).astype("float32")
    y = np.eye(2, dtype="float32")[np.arange(count) % 2]
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat()


@dataclasses.dataclass(frozen=True)
class Dense(Prepared):
    """A two-class dense model over 4 features (`pooled`: over sequences of them, averaged),
    each build appended to `built`."""

    built: list = dataclasses.field(default_factory=list)
    epochs: float = 0.0
    pooled: bool = False

    def build(self, config, train_steps):
        inputs = (
            [keras.Input((None, 4)), keras.layers.GlobalAveragePooling1D()]
            if self.pooled
            else [keras.Input((4,))]
        )
        model = keras.Sequential([*inputs, keras.layers.Dense(2)])
        model.compile(optimizer="sgd", loss=keras.losses.CategoricalCrossentropy(from_logits=True))
        self.built.append(model)
        return model

    @property
    def pretrain_epochs(self):
        return self.epochs


def prepared(built: list, rows=None, evaluations: int = 2, **fields) -> Prepared:
    config = types.SimpleNamespace(
        batch_size=8, evaluations=evaluations, pretrain_objective="masked"
    )
    rows = batches() if rows is None else rows
    return Dense(
        run=None,
        config=config,
        tf_transform_output=None,
        train=rows,
        evaluation=rows,
        built=built,
        **fields,
    )


def trainer_run(budget=None, train_steps=1000, unlabeled=0):
    custom = {"seed": 0, plan.BUDGET_KEY: budget}
    return types.SimpleNamespace(
        custom_config=custom,
        train_steps=train_steps,
        eval_steps=5,
        train_examples=400,
        unlabeled_examples=unlabeled,
    )


@pytest.fixture
def said(caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    return lambda: [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_without_a_budget_the_plan_is_said_and_nothing_is_measured(said):
    built, run = [], trainer_run()
    assert plan.fit_to_budget(run, prepared(built)) == (1000, 0) and built == []
    assert said() == ["plan: 1,000 steps in batches of 8, 20 epochs of 400 training examples"]


def test_a_budget_keeps_the_steps_that_fit_after_measuring_and_validation(said, monkeypatch):
    # 0.5 s a step, 0.1 s a validation batch, 1 s to trace: of 60 s, 2 validation passes of
    # 5 batches (1 s) and two traces (2 s) leave 57 s less the moment the measuring took
    # here: 113 whole steps.
    monkeypatch.setattr(plan, "measure", lambda prepared, steps: (0.5, 0.1, 1.0))
    run = trainer_run(budget=1)
    steps, _ = plan.fit_to_budget(run, prepared([]))
    assert steps == 113 and run.train_steps == 1000  # returned, never written back
    lines = said()
    assert lines[0].startswith("plan: 0.5 s per step of 8 (measured over 5 steps on this machine)")
    assert f"so {steps:,} of the 1,000 planned" in lines[0]
    assert lines[1].startswith(f"plan: {steps:,} steps in batches of 8")
    roomy = trainer_run(budget=60)  # 7,000 steps fit: the planned 1,000 stay
    assert plan.fit_to_budget(roomy, prepared([])).train_steps == 1000
    assert "more than the 1,000 planned: all of them" in said()[2]


def test_the_steps_are_measured_on_a_copy_that_is_dropped():
    built = []
    step, evaluation, trace = plan.measure(prepared(built), 1000)
    assert len(built) == 1 and int(built[0].optimizer.iterations) == plan.WARMUP_STEPS + 5
    assert step > 0 and evaluation > 0 and trace > 0


def test_a_step_on_input_shapes_not_seen_before_is_not_timed():
    """Length-grouped batches come in several shapes, and a step on a new one traces."""
    widths = [3, 5, 7]  # cycling: the third shape is new after the two warm-up steps
    rows = (
        tf.data.Dataset.range(3)
        .repeat()
        .map(
            lambda i: (tf.ones((8, tf.gather(widths, i), 4)), tf.one_hot(tf.zeros(8, tf.int32), 2))
        )
    )
    built = []
    plan.measure(prepared(built, rows=rows, evaluations=1, pooled=True), 9)
    assert int(built[0].optimizer.iterations) == plan.WARMUP_STEPS + 1 + plan.TIMED_STEPS


def test_the_schedule_is_said_over_the_steps_that_run(said):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.AdamW(WarmupLinearDecay(1e-3, 10, 100)), loss="mse")
    plan.describe_schedule(model, 100)
    (line,) = said()
    assert line == (
        "plan: learning rate 0.0001 at step 0, 0.000833 at step 25, 0.000556 at step 50, "
        "0.000278 at step 75, 0 at step 100"
    )
    plan.describe_schedule(keras.Sequential([keras.Input((4,))]), 100)  # no optimizer: silent
    assert len(said()) == 1


def test_a_job_of_several_workers_keeps_its_planned_steps(said, monkeypatch):
    cluster = {"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(cluster))
    monkeypatch.setattr(plan, "measure", lambda prepared, steps: pytest.fail("measured"))
    assert plan.fit_to_budget(trainer_run(budget=1), prepared([])).train_steps == 1000
    assert said()[0] == (
        "plan: --time-budget is not applied on a job of several workers: the planned steps run"
    )


def pretraining_prepared(epochs: float) -> Prepared:
    return prepared([], epochs=epochs)


def test_pretraining_is_planned_in_its_own_line_before_training(said):
    assert plan.fit_to_budget(trainer_run(), pretraining_prepared(10)) == (1000, 500)
    assert said() == [
        "plan: pretraining: 500 steps of masked-token prediction in batches of 8, 10 epochs of "
        "the 400 training texts (labels unread)",
        "plan: 1,000 steps in batches of 8, 20 epochs of 400 training examples",
    ]
    assert plan.fit_to_budget(trainer_run(), pretraining_prepared(0)) == (1000, 0)


def test_pretraining_passes_over_the_unlabelled_texts_too(said):
    # 10 passes over 400 + 1,200 texts in batches of 8: 2,000 steps.
    planned = plan.fit_to_budget(trainer_run(unlabeled=1200), pretraining_prepared(10))
    assert planned == (1000, 2000)
    assert said()[0] == (
        "plan: pretraining: 2,000 steps of masked-token prediction in batches of 8, 10 epochs "
        "of 1,600 texts: the 400 training texts (labels unread) and 1,200 unlabelled"
    )


def test_a_budget_cuts_pretraining_and_training_by_the_same_share(said, monkeypatch):
    # 0.5 s a training step, 1 s a pretraining step: with 500 pretraining steps planned beside
    # 1,000 training steps, each training step kept costs 1 s. Of 60 s, validation (1 s) and
    # three traces (3 s) leave 56 s less the measuring: 55 training steps, 27 pretraining.
    monkeypatch.setattr(plan, "measure", lambda prepared, steps: (0.5, 0.1, 1.0))
    monkeypatch.setattr(plan, "measure_pretraining", lambda prepared: 1.0)
    planned = plan.fit_to_budget(trainer_run(budget=1), pretraining_prepared(10))
    assert planned == (55, 27)
    assert said()[1].startswith("plan: pretraining: 27 steps of masked-token prediction")
    assert said()[1].endswith(", about 27 s")
