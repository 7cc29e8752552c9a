"""The Keras dtype policy training runs under, from the Trainer's `mixed_precision` setting and
the hardware (pure Python: the pipeline validates the setting without loading TensorFlow).

Mixed precision computes in 16 bits and keeps the variables in float32. GPUs have a fast path
for float16 (mixed_float16, with loss scaling); CPUs with AMX-BF16 or AVX512-BF16 have one for
bfloat16 (mixed_bfloat16, float32's range: no loss scaling). Attention softmax and masking,
normalization statistics and losses stay in float32 in the project's layers, and every export
returns float32.
"""

from typing import Optional, Sequence

# auto: mixed precision where the hardware has a fast path for it (float16 on GPUs, bfloat16 on
# CPUs whose instructions include it), float32 elsewhere; on: mixed precision wherever it runs
# (float16 on GPUs, bfloat16 on CPUs); off: float32. A Keras policy name is taken as it is.
MIXED_PRECISION_SETTINGS = ("auto", "on", "off")
POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
# /proc/cpuinfo flags of the x86 instructions that multiply bfloat16 natively.
BFLOAT16_FLAGS = ("amx_bf16", "avx512_bf16")


def cpu_bfloat16_flags(cpuinfo: str = "/proc/cpuinfo") -> list:
    """The BFLOAT16_FLAGS this CPU reports (none where /proc/cpuinfo is missing)."""
    try:
        with open(cpuinfo) as f:
            flags = next(
                (line.split(":", 1)[1].split() for line in f if line.startswith("flags")), []
            )
    except OSError:
        return []
    return [flag for flag in BFLOAT16_FLAGS if flag in flags]


def check_setting(setting: str) -> str:
    if setting not in MIXED_PRECISION_SETTINGS + POLICIES:
        raise ValueError(
            f"mixed_precision must be one of {MIXED_PRECISION_SETTINGS} or a "
            f"policy {POLICIES}, not {setting!r}"
        )
    return setting


def precision_policy(setting: str, gpus: int, cpu_flags: Optional[Sequence[str]] = None) -> str:
    """The Keras dtype policy for `setting` with `gpus` visible GPUs on a CPU reporting
    `cpu_flags` (default: this machine's, read from /proc/cpuinfo)."""
    if check_setting(setting) in POLICIES:
        return setting
    if setting == "off":
        return "float32"
    if gpus > 0:
        return "mixed_float16"
    cpu_flags = cpu_bfloat16_flags() if cpu_flags is None else cpu_flags
    if setting == "on" or any(flag in BFLOAT16_FLAGS for flag in cpu_flags):
        return "mixed_bfloat16"
    return "float32"
