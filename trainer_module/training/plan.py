"""The Trainer's plan, said before it trains: steps, epochs and, with a time budget
(`run --time-budget MINUTES`), the steps fitted to what this machine trains in that time,
measured over a few steps of a throwaway copy of the model. The model, and its learning-rate
schedule, are then built over the steps it returns (run_fn.fit_and_export)."""

import logging
import statistics
import time
from typing import NamedTuple, Optional

import keras
import tensorflow as tf

from trainer_module import compat
from trainer_module.training import distribution, pretraining, schedules
from trainer_module.training.progress import LOGGER, duration

BUDGET_KEY = "time_budget_minutes"  # custom_config's (inputs.TRAINER_KEYS): --time-budget
WARMUP_STEPS = 2  # the first traces the step function; neither is timed
TIMED_STEPS = 5
MAX_SHAPES = 8  # steps on new input shapes, untimed, before the timed ones run out


def say(message: str, *args) -> None:
    """A line the CLI shows under the Trainer's progress line (as training/progress.py's)."""
    logging.getLogger(LOGGER).info("plan: " + message, *args)


class Planned(NamedTuple):
    """The steps the Trainer runs: the supervised ones, and masked-token pretraining's before
    them (training/pretraining.py; 0: none)."""

    train_steps: int
    pretrain_steps: int = 0


def pretraining_texts(run) -> int:
    """The texts pretraining reads: the training examples and the unlabelled texts."""
    return run.train_examples + run.unlabeled_examples


def pretrain_steps_planned(run, prepared) -> int:
    """prepared.pretrain_epochs passes over pretraining's texts (0: no pretraining)."""
    return pretraining.steps_for(
        prepared.pretrain_epochs, pretraining_texts(run), prepared.config.batch_size
    )


def fit_to_budget(run, prepared) -> Planned:
    """The steps to train, said with the plan: run.train_steps (and with pretraining
    config.pretrain_epochs' steps), or with custom_config[BUDGET_KEY] minutes those that fit
    in them, the step times measured on a copy of the model (the measuring counts against the
    budget, and so do the fit's own tracing and its validation passes), never more than
    planned. Pretraining and training are cut by the same share."""
    config, custom = prepared.config, run.custom_config
    examples, planned = run.train_examples, run.train_steps
    pretrain_planned = pretrain_steps_planned(run, prepared)
    steps, pretrain_steps = planned, pretrain_planned
    budget = custom[BUDGET_KEY]
    if budget and distribution.worker_count(distribution.cluster_spec()) > 1:
        # Each worker would time its own steps and could keep another number of them: the
        # collective ops would wait for ever.
        say("--time-budget is not applied on a job of several workers: the planned steps run")
        budget = None
    if budget:
        started = time.monotonic()
        step_seconds, eval_seconds, trace_seconds = measure(prepared, planned)
        pretrain_seconds = measure_pretraining(prepared) if pretrain_planned else 0.0
        evaluations = max(1, min(config.evaluations, planned))
        validation = evaluations * max(1, run.eval_steps or 1) * eval_seconds
        # The fit traces its own step functions (one per phase with several phases: BERT's;
        # pretraining's too).
        traces = 3 if pretrain_planned else 2
        left = budget * 60 - (time.monotonic() - started) - validation - traces * trace_seconds
        # Training steps that fit, with pretraining's planned share of the time beside them.
        per_step = step_seconds + pretrain_seconds * pretrain_planned / planned
        fitted = max(1, int(left / per_step))
        steps = min(planned, fitted)
        pretrain_steps = min(pretrain_planned, int(pretrain_planned * fitted / planned))
        say(
            "%s per step of %d (measured over %d steps on this machine): %s fit in "
            "--time-budget %g min, %s",
            f"{step_seconds:.3g} s",
            config.batch_size,
            TIMED_STEPS,
            f"{fitted:,} steps",
            budget,
            f"so {steps:,} of the {planned:,} planned"
            if fitted < planned
            else f"more than the {planned:,} planned: all of them",
        )
        keras.utils.set_random_seed(int(custom["seed"]))  # as if nothing was measured
    if pretrain_planned:
        texts = f"the {examples:,} training texts (labels unread)"
        unlabeled = run.unlabeled_examples
        if unlabeled:
            texts = f"{pretraining_texts(run):,} texts: {texts} and {unlabeled:,} unlabelled"
        say(
            "pretraining: %s steps of %s in batches of %d, %.3g epochs of %s%s",
            f"{pretrain_steps:,}",
            pretraining.WHAT[config.pretrain_objective],
            config.batch_size,
            pretrain_steps * config.batch_size / pretraining_texts(run),
            texts,
            f", about {duration(pretrain_steps * pretrain_seconds)}" if budget else "",
        )
    say(
        "%s steps in batches of %d, %.3g epochs of %s training examples%s",
        f"{steps:,}",
        config.batch_size,
        steps * config.batch_size / examples,
        f"{examples:,}",
        f", about {duration(steps * step_seconds + validation)} of training" if budget else "",
    )
    return Planned(steps, pretrain_steps)


def measure_pretraining(prepared) -> float:
    """Seconds per pretraining step of a copy of the model, on the run's own batches; then
    dropped."""
    config = prepared.config
    model = prepared.build(config, prepared.run.train_steps)
    spec = prepared.pretraining(model)
    masked = pretraining.compiled(spec, 1000, config.pretrain_learning_rate, config.weight_decay)
    batches = iter(pretraining.masked_batches(spec.token_batches(), spec.masking))
    times = []
    for step in range(WARMUP_STEPS + TIMED_STEPS):
        inputs, labels, weights = next(batches)
        started = time.monotonic()
        masked.train_on_batch(inputs, labels, sample_weight=weights)
        if step >= WARMUP_STEPS:
            times.append(time.monotonic() - started)
    del model, masked
    return statistics.median(times)


def measure(prepared, train_steps: int) -> tuple:
    """(seconds per training step, per validation batch, to trace the training step) of a
    copy of the model built as training builds it (over `train_steps`), on the run's own
    batches; then dropped."""
    model = prepared.build(prepared.config, train_steps)
    prepared.ready_to_train(model)
    # A step on input shapes not seen before traces (and with XLA compiles) the step function:
    # it is not timed. Length-grouped batches (BERT) come in a few shapes.
    batches, seen, times, trace_seconds = iter(prepared.train), set(), [], 0.0
    for step in range(WARMUP_STEPS + TIMED_STEPS + MAX_SHAPES):
        inputs, labels = next(batches)
        shapes = str(tf.nest.map_structure(lambda x: tuple(x.shape), inputs))
        started = time.monotonic()
        model.train_on_batch(inputs, labels)
        if step < WARMUP_STEPS or shapes not in seen:
            trace_seconds += time.monotonic() - started
            seen.add(shapes)
        else:
            times.append(time.monotonic() - started)
            if len(times) == TIMED_STEPS:
                break
    inputs, labels = next(iter(prepared.evaluation))
    model.test_on_batch(inputs, labels)  # traces
    started = time.monotonic()
    model.test_on_batch(inputs, labels)
    eval_seconds = time.monotonic() - started
    del model
    return statistics.median(times or [trace_seconds]), eval_seconds, trace_seconds


def learning_rate_schedule(model: keras.Model):
    """The model's optimizer's LearningRateSchedule, or None (a constant rate, no optimizer)."""
    optimizer = getattr(model, "optimizer", None)
    return compat.learning_rate_schedule(optimizer) if optimizer is not None else None


def schedule_as_trained(model: keras.Model) -> Optional[dict]:
    """The schedule training follows, as history.json records it: its class and settings in
    steps (a preset's warmup_fraction resolved over the steps that run), or None."""
    schedule = learning_rate_schedule(model)
    if schedule is None:
        return None
    return {"schedule": type(schedule).__name__, **schedules.settings_of(schedule)}


def describe_schedule(model: keras.Model, train_steps: int) -> None:
    """Says the learning rate at the start, each quarter and the end of the steps that run,
    when the model's optimizer follows a schedule."""
    schedule = learning_rate_schedule(model)
    if schedule is None:
        return
    points = sorted({0, train_steps // 4, train_steps // 2, 3 * train_steps // 4, train_steps})
    rates = ", ".join(f"{float(schedule(step)):.3g} at step {step:,}" for step in points)
    say("learning rate %s", rates)
