"""Benchmark: one training step of each family's benchmark preset, float32 beside bfloat16.

    .venv/bin/python -m benchmarks.training_step [--steps 20] [--families text_encoder vit]
    KERAS_BACKEND=jax python -m benchmarks.training_step --backend jax [--batch-size 256]

For the preset each pipeline benchmark trains (text encoder `small` at 256 tokens, ViT `cct`
and its `hybrid_airbench`, translator `base` on 24-token batches, BERT's default preset at
all-MiniLM-L6-v2's shape), times
Keras `train_on_batch` on random inputs of the preset's batch size under the float32 and
mixed_bfloat16 policies (median of `--steps` steps after two warm-up steps), and prints
milliseconds per step, examples per second, the step's FLOPs (TensorFlow's profiler) as TFLOP/s
and as a fraction of this machine's matmul peak in that dtype (measured first, in the same run:
report.peak_tflops), and the bfloat16/float32 speed-up. Writes
benchmarks/results/training_step/<machine>.json.

The models are written in keras.ops only, so `--backend jax` times the same models under JAX
(on a GPU when JAX sees one; no TensorFlow needed): milliseconds and examples per second, no
FLOP count, into training_step_jax.json. `--batch-size` replaces the presets' batch size (a
GPU is idle at CPU-sized batches).
"""

import argparse
import os
import statistics
import sys

from benchmarks import report
from trainer_module.training import step_timing

POLICIES = ("float32", "mixed_bfloat16")


BATCH_SIZE: dict[str, int] = {}  # --batch-size, when given, replaces each preset's


def batched(config):
    return config.replace(**BATCH_SIZE) if BATCH_SIZE else config


def text_encoder():
    from trainer_module.text_encoder.config import PRESETS

    config = batched(PRESETS["small"])
    return (lambda: step_timing.text_encoder(config)), config


def vit(preset: str = "cct"):
    from trainer_module.vit.config import PRESETS

    config = batched(PRESETS[preset])
    return (lambda: step_timing.vit(config)), config


def translator():
    from trainer_module.translator.config import PRESETS

    config = batched(PRESETS["base"].replace(source_vocab_size=9567, target_vocab_size=9567))
    # Multi30k's batches are trimmed to about 24 tokens.
    return (lambda: step_timing.translator(config, length=24)), config


def bert():
    """all-MiniLM-L6-v2's shape (6 blocks of 384, 12 heads, feed-forward 1,536, vocabulary
    30,522) with random weights, under the BERT family's default preset."""
    import keras_hub

    from trainer_module.bert.config import PRESETS

    config = batched(PRESETS["default"])

    def synthetic():
        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=30522,
            num_layers=6,
            num_heads=12,
            hidden_dim=384,
            intermediate_dim=1536,
        )
        return step_timing.bert(config, backbone)

    return synthetic, config


FAMILIES = {
    "text_encoder": text_encoder,
    "vit": vit,
    "vit_hybrid": lambda: vit("hybrid_airbench"),  # the ViT paper's hybrid, airbench's stem
    "translator": translator,
    "bert": bert,
}
# TensorFlow's profiler counts several times the translator step's analytic FLOPs (6 x
# parameters x tokens): its share of the peak is not reported.
COUNTED = ("text_encoder", "vit", "vit_hybrid")


def measure(family: str, policy: str, steps: int) -> dict:
    import keras

    from lab.flops import training_flops

    synthetic, config = FAMILIES[family]()
    times, (model, inputs, labels, _) = step_timing.timed_steps(synthetic, policy, steps)
    flops = None
    if family in COUNTED and keras.backend.backend() == "tensorflow":
        flops = training_flops(model, inputs, labels)
    if family == "bert":  # counted from its shapes (report.bert_step_flops)
        flops = report.bert_step_flops(config, 6, 384, 1536)
    seconds = statistics.median(times)
    result = {
        "ms_per_step": round(1000 * seconds, 1),
        "examples_per_second": round(config.batch_size / seconds, 1),
    }
    if flops:
        tflops = flops / seconds / 1e12
        peak = report.peak_tflops("bfloat16" if "bfloat16" in policy else "float32")
        from lab.flops import share_of_peak

        result.update(
            step_gflop=round(flops / 1e9, 2),
            tflops=round(tflops, 4),
            fraction_of_peak=round(share_of_peak(tflops, peak, f"{family} {policy}"), 3),
        )
    return result


def device() -> str:
    """The device the backend computes on: this CPU, or the accelerator JAX found."""
    import keras

    if keras.backend.backend() == "jax":
        import jax

        found = jax.devices()[0]
        return f"JAX {jax.__version__} on {found.device_kind} ({found.platform})"
    return report.machine()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument(
        "--backend",
        choices=("tensorflow", "jax"),
        default="tensorflow",
        help="the Keras backend (before Keras is imported)",
    )
    parser.add_argument("--batch-size", type=int, help="instead of each preset's batch size")
    args = parser.parse_args()
    os.environ["KERAS_BACKEND"] = args.backend
    if args.batch_size:
        BATCH_SIZE["batch_size"] = args.batch_size
    if args.backend == "tensorflow":
        for dtype in ("float32", "bfloat16"):  # measured now, before the steps
            report.peak_tflops(dtype)

    results = {f: {p: measure(f, p, args.steps) for p in POLICIES} for f in args.families}
    print(f"\ntraining step, float32 against mixed_bfloat16 ({device()})\n")
    print(
        f"{'family':14} {'policy':16} {'ms/step':>8} {'examples/s':>11} {'GFLOP':>7} "
        f"{'TFLOP/s':>8} {'of peak':>8}"
    )
    for family, by_policy in results.items():
        for policy, r in by_policy.items():
            counted = (
                f"{r['step_gflop']:>7} {r['tflops']:>8.3f} {r['fraction_of_peak']:>8.1%}"
                if "tflops" in r
                else f"{'-':>7} {'-':>8} {'-':>8}"
            )
            print(
                f"{family:14} {policy:16} {r['ms_per_step']:>8} {r['examples_per_second']:>11} "
                f"{counted}"
            )
        speedup = by_policy["float32"]["ms_per_step"] / by_policy["mixed_bfloat16"]["ms_per_step"]
        print(f"{'':14} bfloat16 speed-up {speedup:.2f}x")
        by_policy["bfloat16_speedup"] = round(speedup, 2)
    name = report.hardware_name() if args.backend == "tensorflow" else args.backend
    report.save(
        "training_step",
        name + (f"-batch-{args.batch_size}" if args.batch_size else ""),
        {"results": results, "device": device(), "batch_size": args.batch_size},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
