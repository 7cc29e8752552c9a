"""The Keras dtype policy training runs under, from the Trainer's `mixed_precision` setting and
the hardware (pure Python: the pipeline validates the setting without loading TensorFlow)."""

# auto: mixed precision where the hardware has a fast path for it; on: mixed_float16;
# off: float32.
MIXED_PRECISION_SETTINGS = ("auto", "on", "off")


def precision_policy(setting: str, gpus: int) -> str:
    """The Keras dtype policy for `setting` (one of MIXED_PRECISION_SETTINGS) with `gpus`
    visible GPUs."""
    if setting not in MIXED_PRECISION_SETTINGS:
        raise ValueError(f"mixed_precision must be one of {MIXED_PRECISION_SETTINGS}, "
                         f"not {setting!r}")
    mixed = setting == "on" or (setting == "auto" and gpus > 0)
    return "mixed_float16" if mixed else "float32"
