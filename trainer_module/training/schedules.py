"""Learning-rate schedules (keras.ops only)."""

import keras
from keras import ops


def warmup_steps(warmup_fraction: float, train_steps: int) -> int:
    """The steps of a warmup over `warmup_fraction` of `train_steps` (every family states its
    warmup as a fraction of its training steps, so it scales with the data and the budget):
    the nearest whole number, at least 1."""
    if not 0 <= warmup_fraction < 1:
        raise ValueError(f"warmup_fraction must be in [0, 1), not {warmup_fraction}")
    return max(1, round(warmup_fraction * train_steps))


class WarmupInverseSqrt(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `peak_learning_rate`, then decay with 1/sqrt(step) (Vaswani et al. 5.3).

    lr(s) = peak * min(s / warmup, sqrt(warmup / s)), s = step + 1. The paper's
    d_model^-0.5 * min(s^-0.5, s * warmup^-1.5) is this with peak = (d_model * warmup)^-0.5.
    """

    def __init__(self, peak_learning_rate: float, warmup_steps: int):
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = max(1, int(warmup_steps))

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0
        warmup = ops.cast(self.warmup_steps, "float32")
        return self.peak_learning_rate * ops.minimum(step / warmup, ops.sqrt(warmup / step))

    def get_config(self):
        return {"peak_learning_rate": self.peak_learning_rate, "warmup_steps": self.warmup_steps}


class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `peak_learning_rate` over `warmup_steps`, then linear decay to zero at
    `total_steps` (BERT's fine-tuning schedule)."""

    def __init__(self, peak_learning_rate: float, warmup_steps: int, total_steps: int):
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = max(0, int(warmup_steps))
        self.total_steps = max(self.warmup_steps + 1, int(total_steps))

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = ops.cast(max(1, self.warmup_steps), "float32")
        total = ops.cast(self.total_steps, "float32")
        rising = (step + 1.0) / warmup
        falling = (total - step) / ops.maximum(total - warmup, 1.0)
        fraction = ops.where(step < self.warmup_steps, rising, falling)
        return self.peak_learning_rate * ops.clip(fraction, 0.0, 1.0)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
        }


def warmup_cosine(peak_learning_rate: float, warmup_steps: int, total_steps: int):
    """Keras' CosineDecay with its linear warmup (the ViT and CCT recipes), on this project's
    warmup convention: peak / warmup_steps at step 0, the peak at step warmup_steps - 1 (as
    every schedule here), then cosine decay to zero at `total_steps`."""
    warmup = max(1, int(warmup_steps))
    total = max(warmup + 1, int(total_steps))
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=peak_learning_rate / warmup,
        decay_steps=total - warmup + 1,
        alpha=0.0,
        warmup_target=peak_learning_rate,
        warmup_steps=warmup - 1,
    )


def settings_of(schedule) -> dict:
    """A schedule's settings on this project's convention (warmup_cosine's Keras CosineDecay
    counted as its warmup and total steps, as a preset states them), for history.json."""
    config = schedule.get_config()
    if isinstance(schedule, keras.optimizers.schedules.CosineDecay) and config.get("warmup_target"):
        warmup = int(config["warmup_steps"]) + 1
        return {
            "peak_learning_rate": config["warmup_target"],
            "warmup_steps": warmup,
            "total_steps": warmup - 1 + int(config["decay_steps"]),
        }
    return {k: v for k, v in config.items() if k != "name"}


class Triangular(keras.optimizers.schedules.LearningRateSchedule):
    """airbench's (Jordan, 2024): linear from `start` x peak to the peak over `warmup_steps`,
    then linear to `end` x peak at `total_steps`."""

    def __init__(
        self,
        peak_learning_rate: float,
        warmup_steps: int,
        total_steps: int,
        start: float = 0.2,
        end: float = 0.07,
    ):
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = max(1, int(warmup_steps))
        self.total_steps = max(self.warmup_steps + 1, int(total_steps))
        self.start, self.end = start, end

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = ops.cast(self.warmup_steps, "float32")
        rising = ops.clip(step / warmup, 0.0, 1.0)
        falling = ops.clip((step - warmup) / float(self.total_steps - self.warmup_steps), 0.0, 1.0)
        fraction = ops.where(
            step < warmup,
            self.start + (1.0 - self.start) * rising,
            1.0 + (self.end - 1.0) * falling,
        )
        return self.peak_learning_rate * fraction

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "start": self.start,
            "end": self.end,
        }


def warmup_then(decay: str, peak_learning_rate: float, warmup_steps: int, total_steps: int):
    """Linear warmup, then `decay` (trainer_module/family.py: DECAYS) over total_steps."""
    if decay == "inverse_sqrt":
        return WarmupInverseSqrt(peak_learning_rate, warmup_steps)
    schedule = {"linear": WarmupLinearDecay, "cosine": warmup_cosine}[decay]
    return schedule(peak_learning_rate, warmup_steps, total_steps)
