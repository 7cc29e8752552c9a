"""Benchmark: this machine's matrix-multiply peak in float32 and bfloat16 (TensorFlow's oneDNN
kernels, the ones training uses), and what the training benchmarks compare their achieved
FLOP/s with.

    .venv/bin/python -m benchmarks.hardware [--sizes 1024 2048] [--seconds 3]

Prints TFLOP/s per dtype and size, the bfloat16/float32 ratio, whether the CPU reports
AMX-BF16 / AVX512-BF16, and the dtype policy `--mixed-precision auto` picks here. Writes
benchmarks/results/hardware/<cpu model>-family-<F>-model-<M>-<cores>-cores-<bf16 flags>.json
(report.hardware_name), which the training benchmarks read for the peak of the CPU they run
on: a peak is never borrowed from another generation that carries the same model name.
"""

import argparse
import sys

from benchmarks import report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()

    from trainer_module.training import precision

    tflops = {
        dtype: {
            str(size): round(precision.matmul_tflops(size, dtype, args.seconds), 3)
            for size in args.sizes
        }
        for dtype in ("float32", "bfloat16")
    }
    print(f"matmul peak ({report.machine()}), TensorFlow oneDNN kernels\n")
    print(f"{'size':>6} {'float32 TFLOP/s':>16} {'bfloat16 TFLOP/s':>17} {'ratio':>7}")
    for size in args.sizes:
        f32, bf16 = tflops["float32"][str(size)], tflops["bfloat16"][str(size)]
        print(f"{size:>6} {f32:>16.3f} {bf16:>17.3f} {bf16 / f32:>7.2f}")
    flags = precision.cpu_bfloat16_flags()
    policy = precision.precision_policy("auto", gpus=0)
    print(
        f"\nCPU bfloat16 instructions: {', '.join(flags) or 'none'}; "
        f"--mixed-precision auto picks {policy} here"
    )
    report.save(
        "hardware",
        report.hardware_name(),
        {"tflops": tflops, "cpu_bfloat16_flags": flags, "auto_policy": policy},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
