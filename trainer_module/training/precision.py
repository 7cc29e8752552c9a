"""The Keras dtype policy training runs under, from the Trainer's `mixed_precision` setting and
the hardware (pure Python: the pipeline validates the setting without loading TensorFlow).

Mixed precision computes in 16 bits and keeps the variables in float32. GPUs have a fast path
for float16 (mixed_float16, with loss scaling); CPUs with AMX-BF16 or AVX512-BF16 may have one
for bfloat16 (mixed_bfloat16, float32's range: no loss scaling), and `auto` times it before
taking it: a CPU can list AVX512-BF16 and still multiply bfloat16 at half float32's rate.
Attention softmax and masking, normalization statistics and losses stay in float32 in the
project's layers, and every export returns float32.
"""

import json
import logging
import os
import tempfile
import time
from typing import Callable, Dict, Optional, Sequence

# auto: mixed precision where the hardware has a fast path for it (float16 on GPUs; bfloat16 on
# CPUs whose instructions include it and whose timed bfloat16 matmul is faster), float32
# elsewhere; on: mixed precision wherever it runs (float16 on GPUs, bfloat16 on CPUs); off:
# float32. A Keras policy name is taken as it is.
MIXED_PRECISION_SETTINGS = ("auto", "on", "off")
POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
# /proc/cpuinfo flags of the x86 instructions that multiply bfloat16 natively.
BFLOAT16_FLAGS = ("amx_bf16", "avx512_bf16")
# auto takes mixed_bfloat16 on a CPU only where a bfloat16 matmul runs at least this many times
# float32's rate: a mixed step also casts, and its elementwise work does not speed up. Seen
# (TFLOP/s float32 / bfloat16, benchmarks/hardware.py): Zen 4 EPYC (family 25 model 17) 0.21 /
# 0.36, Zen 5 (family 26) 0.47 / 0.87; an Intel Xeon of family 6 model 207 that lists
# AVX512-BF16 without AMX 0.28 / 0.14, where mixed training steps ran 1.3 to 1.7x slower than
# float32's (issue 101).
BFLOAT16_MIN_SPEEDUP = 1.2
# The timed matmul: (n x n) @ (n x n), for about this long per dtype; cached per CPU.
MATMUL_SIZE, MATMUL_SECONDS = 1024, 0.4
CACHE_VARIABLE = "TFXT_CACHE_DIR"  # default: $XDG_CACHE_HOME/tfx-transformers (~/.cache)


def cpu_fields(cpuinfo: str = "/proc/cpuinfo") -> Dict[str, str]:
    """The first processor's fields in /proc/cpuinfo ("model name", "cpu family", "model",
    "flags", ...; none where the file is missing)."""
    fields: Dict[str, str] = {}
    try:
        with open(cpuinfo) as f:
            for line in f:
                if not line.strip():
                    if fields:
                        break
                    continue
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_bfloat16_flags(cpuinfo: str = "/proc/cpuinfo") -> list:
    """The BFLOAT16_FLAGS this CPU reports (none where /proc/cpuinfo is missing)."""
    flags = cpu_fields(cpuinfo).get("flags", "").split()
    return [flag for flag in BFLOAT16_FLAGS if flag in flags]


def cpu_signature(cpuinfo: str = "/proc/cpuinfo") -> str:
    """What the matmul rates depend on: the CPU's model name, family, model and bfloat16
    flags, the cores this process may use, and TensorFlow's version (its kernels)."""
    fields = cpu_fields(cpuinfo)
    import importlib.metadata

    try:
        tensorflow = importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        tensorflow = "none"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return "|".join(
        [
            fields.get("model name", "unknown"),
            f"family {fields.get('cpu family', '?')} model {fields.get('model', '?')}",
            ",".join(cpu_bfloat16_flags(cpuinfo)) or "no-bf16",
            f"{cores} cores",
            f"tensorflow {tensorflow}",
        ]
    )


def matmul_tflops(size: int, dtype: str, seconds: float) -> float:
    """Sustained TFLOP/s of a (size x size) @ (size x size) matmul in `dtype` (TensorFlow's
    oneDNN kernels, the ones training uses)."""
    import tensorflow as tf

    a = tf.cast(tf.random.normal((size, size), dtype=tf.float32), dtype)
    b = tf.cast(tf.random.normal((size, size), dtype=tf.float32), dtype)
    multiply = tf.function(lambda x, y: tf.linalg.matmul(x, y))
    multiply(a, b).numpy()  # trace, warm the kernels
    runs, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        multiply(a, b).numpy()
        runs += 1
    elapsed = time.perf_counter() - started
    return 2 * size**3 * runs / elapsed / 1e12


def _cache_file() -> str:
    root = os.environ.get(CACHE_VARIABLE) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tfx-transformers"
    )
    return os.path.join(root, "matmul_rates.json")


def measured_rates(
    measure: Optional[Callable[[str], float]] = None, cache_file: Optional[str] = None
) -> Dict[str, float]:
    """{"float32", "bfloat16"}: this CPU's timed matmul TFLOP/s, measured once per CPU
    signature (about a second) and cached in `cache_file` (a cache that cannot be written is
    skipped); `measure(dtype)` replaces the timing."""
    cache_file = cache_file or _cache_file()
    signature = cpu_signature()
    try:
        with open(cache_file) as cache:
            cached = json.load(cache)
    except (OSError, ValueError):
        cached = {}
    cached = cached if isinstance(cached, dict) else {}  # a cache of another form: rewritten
    if isinstance(cached.get(signature), dict):
        return cached[signature]
    measure = measure or (lambda dtype: matmul_tflops(MATMUL_SIZE, dtype, MATMUL_SECONDS))
    rates = {dtype: round(measure(dtype), 4) for dtype in ("float32", "bfloat16")}
    try:
        os.makedirs(os.path.dirname(cache_file), exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=os.path.dirname(cache_file), delete=False, suffix=".tmp"
        ) as written:
            json.dump({**cached, signature: rates}, written, indent=1)
        os.replace(written.name, cache_file)  # whole, or not at all
    except OSError:
        pass
    return rates


def check_setting(setting: str) -> str:
    if setting not in MIXED_PRECISION_SETTINGS + POLICIES:
        raise ValueError(
            f"mixed_precision must be one of {MIXED_PRECISION_SETTINGS} or a "
            f"policy {POLICIES}, not {setting!r}"
        )
    return setting


def precision_policy(
    setting: str,
    gpus: int,
    cpu_flags: Optional[Sequence[str]] = None,
    rates: Optional[Callable[[], Dict[str, float]]] = None,
) -> str:
    """The Keras dtype policy for `setting` with `gpus` visible GPUs on a CPU reporting
    `cpu_flags` (default: this machine's, read from /proc/cpuinfo), whose matmul TFLOP/s per
    dtype `rates()` gives (default: measured_rates, timed once per CPU)."""
    if check_setting(setting) in POLICIES:
        return setting
    if setting == "off":
        return "float32"
    if gpus > 0:
        return "mixed_float16"
    if setting == "on":
        return "mixed_bfloat16"
    cpu_flags = cpu_bfloat16_flags() if cpu_flags is None else cpu_flags
    if not any(flag in BFLOAT16_FLAGS for flag in cpu_flags):
        return "float32"  # bfloat16 emulated: several times slower
    measured = (rates or measured_rates)()
    faster = measured["bfloat16"] >= BFLOAT16_MIN_SPEEDUP * measured["float32"]
    logging.info(
        "Mixed precision auto: matmul %.3g TFLOP/s in bfloat16, %.3g in float32: %s",
        measured["bfloat16"],
        measured["float32"],
        "mixed_bfloat16" if faster else f"float32 (bfloat16 under {BFLOAT16_MIN_SPEEDUP}x)",
    )
    return "mixed_bfloat16" if faster else "float32"
