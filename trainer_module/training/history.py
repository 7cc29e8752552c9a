"""Training with evaluations spread over the steps, and what it leaves: TensorBoard logs,
per-evaluation log lines and history.json in the Trainer's model run directory."""

import dataclasses
import json
import math
import os
import time
from typing import Callable, Optional

import keras
import tensorflow as tf
from absl import logging

HISTORY_FILE = "history.json"  # in the Trainer's model run directory


class LogEvaluations(keras.callbacks.Callback):
    """Logs each evaluation's metrics (to the run log, not to the CLI's stdout)."""

    def __init__(self, evaluations: int):
        super().__init__()
        self.evaluations = evaluations

    def on_epoch_end(self, epoch, logs=None):
        metrics = ", ".join(
            f"{k} {v:.4f}" for k, v in sorted((logs or {}).items()) if k != "learning_rate"
        )
        logging.info("Evaluation %d/%d: %s", epoch + 1, self.evaluations, metrics)


class ValidateRawWeights(keras.callbacks.Callback):
    """With an average of the weights (the optimizer's EMA, which validation uses and training
    ends with), also validates the weights training reached, after the last evaluation: logged
    as `val_raw_<metric>`, so that one run shows what the average gained. Place it before
    Keras's SwapEMAWeights, which swaps the average in at the end of each epoch."""

    def __init__(self, evaluation, steps: int):
        super().__init__()
        self.evaluation, self.steps = evaluation, steps

    def on_epoch_end(self, epoch, logs=None):
        if logs is None or epoch != self.params["epochs"] - 1:
            return
        raw = self.model.evaluate(self.evaluation, steps=self.steps, verbose=0, return_dict=True)
        logs.update({f"val_raw_{name}": value for name, value in raw.items()})


def ema_callbacks(model, evaluation, steps: int) -> list:
    """The callbacks a fit with the optimizer's EMA needs (none without): validation of the
    average, and of the raw weights after the last evaluation (ValidateRawWeights)."""
    if not getattr(model.optimizer, "use_ema", False):
        return []
    return [
        ValidateRawWeights(evaluation, steps),
        keras.callbacks.SwapEMAWeights(swap_on_epoch=True),
    ]


def write_history(model_run_dir: str, config: dict, history: dict, **extra) -> None:
    """Writes {"config", "precision", "history": {metric: [value per evaluation]}, **extra} as
    JSON; `precision` is the dtype policy training ran under."""
    tf.io.gfile.makedirs(model_run_dir)
    record = {
        "config": config,
        "precision": keras.mixed_precision.global_policy().name,
        **extra,
        "history": {k: [float(v) for v in vs] for k, vs in history.items()},
    }
    with tf.io.gfile.GFile(os.path.join(model_run_dir, HISTORY_FILE), "w") as f:
        json.dump(record, f, indent=1)


@dataclasses.dataclass(frozen=True)
class Fitted:
    """What a fit leaves for history.json (throughput, write_history)."""

    history: dict  # metric -> [value per evaluation]
    fit_seconds: float
    resumed_from_step: int = 0  # the step a rerun after a kill resumed from (training/backup.py)
    warm_start: Optional[dict] = None  # training/warm_start.py: from where, or why not
    pretraining: Optional[dict] = None  # training/pretraining.py's record, or why it was skipped


def fit_with_evaluations(
    model: keras.Model,
    train,
    evaluation,
    run,
    evaluations: int,
    batch_size: int,
    average_last: int = 1,
    before_training: Optional[Callable[[], dict]] = None,
) -> Fitted:
    """Trains for run.train_steps with `evaluations` validation passes (of eval_steps) spread
    evenly over them (Keras "epochs"), reporting progress (training/progress.py; `batch_size`:
    the global batch), logging to TensorBoard in the model run directory, and
    backing up after each (training/backup.py): a rerun after a kill resumes from the last.
    With `average_last` > 1 the model ends with the mean of its weights after each of the last
    `average_last` evaluations (training/averaging.py). Starts from the base model's weights
    when they fit, and keeps its own for the next run (training/warm_start.py).
    `before_training` (masked-token pretraining) runs first, unless the model starts from a
    base model's weights or resumes a backup, whose weights win over it."""
    from trainer_module.training import averaging, backup, warm_start
    from trainer_module.training.progress import Progress

    evaluations = max(1, min(evaluations, run.train_steps))
    restore = backup.callback(run)
    steps_per_interval = math.ceil(run.train_steps / evaluations)
    done = restore.finished_intervals() * steps_per_interval if restore else 0
    callbacks = [
        keras.callbacks.TensorBoard(log_dir=run.model_run_dir),
        LogEvaluations(evaluations),
        Progress("training", steps_per_interval * evaluations, batch_size, first_step=done),
    ]
    if restore is not None:
        callbacks.insert(0, restore)
    average = averaging.callback(average_last, restore)
    if average is not None:  # its snapshot is written before the backup that counts it done
        callbacks.insert(0, average)
    validation_steps = max(1, run.eval_steps or 1)
    callbacks[:0] = ema_callbacks(model, evaluation, validation_steps)
    warm = warm_start.load(model, run)  # a backup, when there is one, wins over it
    pretrained = None
    if before_training is not None:
        if done:
            pretrained = {"skipped": f"resumed from the backup of step {done}"}
        elif warm and "from" in warm:
            pretrained = {"skipped": f"warm-started from {warm['from']}"}
        else:
            pretrained = before_training()
        if "skipped" in pretrained:
            logging.info("Not pretraining: %s", pretrained["skipped"])
    started = time.perf_counter()
    history = model.fit(
        backup.continued(train, restore, steps_per_interval),
        steps_per_epoch=steps_per_interval,
        epochs=evaluations,
        validation_data=evaluation,
        validation_steps=validation_steps,
        callbacks=callbacks,
        verbose=0,
    )
    fitted = Fitted(
        history.history,
        time.perf_counter() - started,
        restore.resumed_from_step if restore else 0,
        warm,
        pretrained,
    )
    warm_start.save(model, run)
    return fitted


def throughput(
    fit_seconds: float,
    run,
    batch_size: int,
    resumed_from_step: int = 0,
    warm_start: Optional[dict] = None,
) -> dict:
    """What history.json records of a fit's length and speed: steps, epochs of the training
    examples (training.inputs.start_run counted them), the step a resumed run started from,
    examples per second of the steps this run trained (validation passes included), and the
    warm start (training/warm_start.py: from where, or why not; None without a base model)."""
    steps, examples = run.train_steps, run.train_examples
    trained = max(steps - resumed_from_step, 0)
    return {
        "train_steps": steps,
        "batch_size": batch_size,
        "train_examples": examples,
        "epochs": round(steps * batch_size / examples, 3) if examples else None,
        "resumed_from_step": resumed_from_step,
        "warm_start": warm_start,
        "fit_seconds": round(fit_seconds, 1),
        "train_examples_per_second": round(trained * batch_size / max(fit_seconds, 1e-9), 1),
    }
