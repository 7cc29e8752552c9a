"""Training progress at a steady rate: a log line every few seconds with the steps done of the
total, the loss, examples per second and the time left. The CLI shows these lines under the
Trainer's or Tuner's progress line (pipeline/runner.py); elsewhere they are in the log.
"""

import logging
import os
import time
from typing import Optional

import keras

# Where the CLI finds the lines: records of this logger.
LOGGER = "tfx_transformers.progress"
# Seconds between two lines; TFXT_PROGRESS_SECONDS overrides it (0: a line per step).
INTERVAL_SECONDS = 10.0


def interval_seconds() -> float:
    return float(os.environ.get("TFXT_PROGRESS_SECONDS", INTERVAL_SECONDS))


def duration(seconds: float) -> str:
    """12 s, 3 min 05 s, 1 h 02 min."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress(keras.callbacks.Callback):
    """Logs `<label>: step s/S (p%), loss L, E examples/s, T left` every `interval` seconds
    and once at the end of training. `total_steps` counts the steps of this fit; `first_step`
    the ones a resumed fit skips (they count as done, not in the rate)."""

    def __init__(
        self,
        label: str,
        total_steps: int,
        batch_size: int,
        first_step: int = 0,
        interval: Optional[float] = None,
    ):
        super().__init__()
        self.label, self.total, self.batch_size = label, total_steps, batch_size
        self.first_step = self.step = first_step
        self.interval = interval_seconds() if interval is None else interval
        self.loss: Optional[float] = None
        self.batch_started: Optional[float] = None

    def on_train_begin(self, logs=None):
        self.started = self.last = time.monotonic()
        # The rate is of the batches after the first (which traces the step function), without
        # validation passes.
        self.timed_steps, self.training_seconds, self.batch_started = 0, 0.0, None

    def on_train_batch_begin(self, batch, logs=None):
        self.batch_started = time.monotonic()

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        if self.step > self.first_step + 1:
            self.timed_steps += 1
            self.training_seconds += time.monotonic() - (self.batch_started or time.monotonic())
        if logs and "loss" in logs:
            self.loss = float(logs["loss"])
        now = time.monotonic()
        if now - self.last >= self.interval and self.step < self.total:
            self.last = now
            self.report()

    def on_train_end(self, logs=None):
        self.report(final=True)

    def report(self, final: bool = False) -> None:
        seconds_per_step = self.training_seconds / max(self.timed_steps, 1)
        parts = [f"step {self.step}/{self.total} ({self.step / max(self.total, 1):.0%})"]
        if self.loss is not None:
            parts.append(f"loss {self.loss:.4f}")
        if self.timed_steps:
            parts.append(f"{self.batch_size / seconds_per_step:,.1f} examples/s")
            if not final:
                parts.append(f"{duration((self.total - self.step) * seconds_per_step)} left")
        if final:
            parts.append(f"{duration(time.monotonic() - self.started)} in all")
        logging.getLogger(LOGGER).info("%s: %s", self.label, ", ".join(parts))
