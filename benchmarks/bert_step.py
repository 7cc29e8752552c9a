"""Benchmark: where a BERT fine-tuning step's time goes on this CPU, and what each change buys.

    .venv/bin/python -m benchmarks.bert_step [--sequence-length 256] [--steps 6]

all-MiniLM-L6-v2's shape (6 blocks of 384, 12 heads, feed-forward 1,536; random weights) under
the BERT family's default preset at `--sequence-length` pieces, batch 32, the bottom 3 blocks
frozen, timed with Keras `train_on_batch` (median of `--steps` after two warm-up steps), side by
side in one process:

- the backbone's own graph, every block in training mode (the classifier before 2026-11-25);
- the classifier's `encode`: the frozen blocks in inference mode, so without dropout;
- and no dropout on the attention probabilities (`attention_dropout=0`);
- the same in float32, and compiled by XLA (`jit_compile`).

For the first and the third, TensorFlow's profiler splits the compute threads' busy time by what
each op belongs to: matrix products, dropout (random numbers, masks), GELU, softmax, layer
norm, casts between dtypes, the optimizer, the sums that finish a dense layer's kernel
gradient, bias adds, the rest. Reports examples/s, TFLOP/s
(report.bert_step_flops) and the share of this CPU's matmul peak, measured first in the same
run (report.peak_tflops). Writes benchmarks/results/bert_step/<machine>.json.
"""

import argparse
import statistics
import sys
import time

from benchmarks import report

SHAPE = dict(num_layers=6, num_heads=12, hidden_dim=384, intermediate_dim=1536)
# (label, policy, the backbone's own graph, attention_dropout, XLA, profiled)
VARIANTS = (
    ("backbone graph, dropout everywhere", "mixed_bfloat16", True, None, False, True),
    ("frozen blocks in inference mode", "mixed_bfloat16", False, None, False, False),
    ("+ no attention dropout", "mixed_bfloat16", False, 0.0, False, True),
    ("+ no attention dropout, float32", "float32", False, 0.0, False, False),
    ("+ no attention dropout, XLA", "mixed_bfloat16", False, 0.0, True, False),
)
# What an op belongs to, by its name (the first match), else by its type.
PARTS_BY_NAME = (
    ("dropout", "dropout"),
    # A dense layer over tokens is a batched product in TensorFlow: its kernel's gradient is
    # summed over the batch afterwards.
    ("MatMul/Sum", "kernel-gradient sums"),
    ("BiasAdd", "bias adds"),
    ("Gelu", "GELU"),
    ("softmax", "softmax"),
    ("layer_norm", "layer norm"),
    ("adamw", "optimizer"),
)
PARTS_BY_TYPE = {
    "MatMul": "matrix products",
    "BatchMatMul": "matrix products",
    "Einsum": "matrix products",
    "Softmax": "softmax",
    "Cast": "casts",
    "VariableOp": "optimizer",
}


def build(sequence_length: int, policy: str, backbone_graph: bool, attention_dropout):
    import keras
    import keras_hub
    import numpy as np

    from trainer_module.bert.config import PRESETS
    from trainer_module.bert.model import BACKBONE_INPUTS, BertClassifier, example_inputs

    class BackboneGraph(BertClassifier):
        """The classifier as it was: through the backbone's graph, every block in training
        mode."""

        def encode(self, inputs, training=None):
            backbone_inputs = {k: inputs[k] for k in BACKBONE_INPUTS}
            return self.backbone(backbone_inputs, training=training)["sequence_output"]

    keras.mixed_precision.set_global_policy(policy)
    config = PRESETS["default"].replace(
        ngram_buckets=0,
        sequence_length=sequence_length,
        truncation_head=min(64, sequence_length - 2),
        attention_dropout=attention_dropout,
    )
    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=30522, max_sequence_length=max(512, sequence_length), **SHAPE
    )
    model = (BackboneGraph if backbone_graph else BertClassifier)(backbone, config)
    model.train_phase("full")
    inputs = example_inputs(config, config.batch_size)
    inputs["token_ids"] = (
        np.random.default_rng(0)
        .integers(1000, 30522, size=inputs["token_ids"].shape)
        .astype("int32")
    )
    inputs["padding_mask"][:] = 1  # reviews fill the pieces
    labels = np.eye(2, dtype="float32")[np.arange(config.batch_size) % 2]
    return model, config, inputs, labels


def part(op: str) -> str:
    """What a profiled op ("scope/name:Type") belongs to."""
    name, _, op_type = op.rpartition(":")
    lowered = name.lower()
    for key, label in PARTS_BY_NAME:
        if key.lower() in lowered:
            return label
    for key, label in PARTS_BY_TYPE.items():
        if key in op_type:
            return label
    return "the rest"


def measure(variant, sequence_length: int, steps: int) -> dict:
    import keras

    label, policy, backbone_graph, attention_dropout, xla, profiled = variant
    model, config, inputs, labels = build(
        sequence_length, policy, backbone_graph, attention_dropout
    )
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-4),
        loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        jit_compile=xla,
    )
    step = lambda: model.train_on_batch(inputs, labels)  # noqa: E731
    for _ in range(2):
        step()  # trace, warm the kernels
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    seconds = statistics.median(times)
    from lab.flops import share_of_peak

    tflops = report.bert_step_flops(config, 6, 384, 1536) / seconds / 1e12
    peak = report.peak_tflops("bfloat16" if "bfloat16" in policy else "float32")
    result = {
        "variant": label,
        "ms_per_step": round(1000 * seconds, 1),
        "examples_per_second": round(config.batch_size / seconds, 2),
        "tflops": round(tflops, 4),
        "fraction_of_peak": round(share_of_peak(tflops, peak, label), 3),
    }
    if profiled:
        result["busy_seconds"] = {k: round(v, 3) for k, v in report.op_seconds(step, part).items()}
    print(
        f"{label:40} {result['ms_per_step']:>8} ms {result['examples_per_second']:>7} ex/s "
        f"{tflops:6.3f} TFLOP/s {result['fraction_of_peak']:6.1%} of the {policy} peak",
        flush=True,
    )
    keras.mixed_precision.set_global_policy("float32")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequence-length", type=int, default=256)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    for dtype in ("float32", "bfloat16"):  # measured now, before the steps
        report.peak_tflops(dtype)
    print(f"BERT training step at {args.sequence_length} pieces, batch 32 ({report.machine()})\n")
    results = [measure(v, args.sequence_length, args.steps) for v in VARIANTS]
    baseline = results[0]["ms_per_step"]
    rows = [
        [
            r["variant"],
            r["ms_per_step"],
            r["examples_per_second"],
            round(baseline / r["ms_per_step"], 2),
            r["tflops"],
            r["fraction_of_peak"],
        ]
        for r in results
    ]
    profiled = [r for r in results if "busy_seconds" in r]
    parts = sorted({p for r in profiled for p in r["busy_seconds"]})
    shares = [
        [p]
        + [
            round(r["busy_seconds"].get(p, 0.0) / sum(r["busy_seconds"].values()), 3)
            for r in profiled
        ]
        for p in parts
    ]
    shares.sort(key=lambda row: -row[1])
    print("\nshare of the compute threads' busy time:")
    for row in shares:
        print(f"  {row[0]:22} " + " ".join(f"{s:7.1%}" for s in row[1:]))
    report.save(
        "bert_step",
        f"{report.hardware_name()}-{args.sequence_length}",
        {
            "title": f"BERT step at {args.sequence_length} pieces, {report.machine()}",
            "sequence_length": args.sequence_length,
            "results": results,
            "tables": [
                {
                    "title": "the step, side by side (speed-up against the first row)",
                    "columns": [
                        "variant",
                        "ms/step",
                        "examples/s",
                        "speed-up",
                        "TFLOP/s",
                        "of peak",
                    ],
                    "rows": rows,
                },
                {
                    "title": "share of the compute threads' busy time",
                    "columns": ["part"] + [r["variant"] for r in profiled],
                    "rows": shares,
                },
            ],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
