"""Benchmark: the whole IMDB pipeline on the real 25,000 labelled training reviews.

    .venv/bin/python -m benchmarks.imdb_pipeline [--tarball PATH | --data DIR] [--output DIR]
        [--epochs 2] [--preset small] [--set KEY=VALUE ...] [--beam-mode in_memory]
    .venv/bin/python -m benchmarks.imdb_pipeline --model bert --bert-preset DIR --preset long

Holds out a seeded 20% of the reviews (about 5,000) as the validation split, runs every
component with LocalDagRunner in this process, and prints validation accuracy (TFMA), wall
time per component and peak memory, each side by side with its target or published anchor
and the ratio between them. Writes the same as JSON to <output>/imdb_benchmark.json.
"""

import argparse
import os
import sys
import tarfile

from benchmarks import report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TARBALL = os.path.join(REPO, "..", "shared", "data", "imdb", "aclImdb_train.tar.gz")

# (name, measured key, reference, kind): "target" is this project's goal on a 2-core CPU,
# "anchor" a published number.
REFERENCES = [
    ("validation accuracy", "accuracy", 0.88, "target (higher is better)"),
    (
        "validation accuracy",
        "accuracy",
        0.8745,
        "anchor: keras.io text_classification_with_transformer, IMDB test",
    ),
    (
        "validation accuracy",
        "accuracy",
        0.882,
        "anchor: bert_tiny fine-tuned, IMDB test, length 512 (compare with --model bert)",
    ),
    (
        "validation accuracy",
        "accuracy",
        0.9077,
        "anchor: NBSVM uni-bi-trigrams, this split (imdb_recipes.py --anchor)",
    ),
    (
        "n-gram path alone",
        "wide_alone_accuracy",
        0.9077,
        "anchor: NBSVM uni-bi-trigrams, this split (issue 48: at least)",
    ),
    ("validation accuracy", "accuracy", 0.925, "target of issue 48, text encoder"),
    ("validation accuracy", "accuracy", 0.935, "target of issue 48, --model bert"),
    ("calibration", "calibration", 1.0, "a calibrated model's (TFMA: mean prediction / label)"),
    ("pipeline wall time (s)", "wall_seconds", 15 * 60, "target (lower is better)"),
    ("peak memory (GB)", "peak_memory_gb", 8.0, "target (lower is better)"),
    ("validation accuracy", "accuracy", 0.90, "target of issue 17 (higher is better)"),
    ("pipeline wall time (s)", "wall_seconds", 5 * 60, "target of issue 17 (lower is better)"),
    (
        "validation accuracy",
        "accuracy",
        0.93,
        "target of issue 30, --model bert (higher is better)",
    ),
    (
        "validation accuracy",
        "accuracy",
        0.928,
        "anchor: DistilBERT (66 M parameters) fine-tuned, IMDB test (Sanh et al., 2019)",
    ),
    (
        "pipeline wall time (s)",
        "wall_seconds",
        40 * 60,
        "target of issue 30, --model bert (lower is better)",
    ),
]


def extract(tarball: str, into: str) -> str:
    marker = os.path.join(into, ".extracted")
    if not os.path.exists(marker):
        print(f"extracting {tarball} ...", file=sys.stderr)
        with tarfile.open(tarball) as archive:
            archive.extractall(into, filter="data")
        open(marker, "w").close()
    return into


def efficiency_of(model: str, history: dict) -> dict:
    """The Trainer's FLOP/s against the machine's peak (measured in this run:
    report.peak_tflops; {} without history): a training step of the same model, for BERT counted
    from its shapes in the phase that trains most of the steps (the "full" phase, with
    its frozen layers)."""
    if not history:
        return {}
    if model == "bert":
        from trainer_module.bert.checkpoint import load_backbone
        from trainer_module.bert.config import BertConfig

        config = BertConfig.from_dict(history["config"])
        backbone = load_backbone(config.backbone_preset)
        flops = report.bert_step_flops(
            config,
            backbone.num_layers,
            backbone.hidden_dim,
            backbone.intermediate_dim,
            history.get("padded_lengths"),
        )
        return report.efficiency(flops, history)
    from trainer_module.text_encoder.config import TextEncoderConfig
    from trainer_module.text_encoder.model import TextEncoderClassifier
    from trainer_module.training import step_timing

    config = TextEncoderConfig.from_dict(history["config"])
    return report.training_efficiency(
        TextEncoderClassifier, config, history, step_timing.text_encoder_inputs(config)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tarball", default=DEFAULT_TARBALL)
    parser.add_argument("--data", help="an extracted aclImdb tree (instead of --tarball)")
    parser.add_argument("--model", default="text_encoder", choices=["text_encoder", "bert"])
    parser.add_argument(
        "--bert-preset",
        help="with --model bert: a KerasHub preset folder or a Hugging Face checkpoint folder",
    )
    from pipeline.tasks import get_task

    report.add_pipeline_arguments(parser, "imdb_pipeline", None, None)
    args = parser.parse_args()
    if args.epochs is None:  # the family's recipe, as `run --task imdb --model M` trains it
        args.epochs = get_task("imdb").recipe_epochs(args.model)

    extra = {"backbone_preset": os.path.abspath(args.bert_preset)} if args.bert_preset else {}
    overrides = report.overrides(args)
    config = report.model_config("imdb", args, args.model)
    preset = args.preset or ("default" if args.model == "bert" else "small")
    data = args.data or extract(args.tarball, os.path.join(args.output, "data"))
    eval_steps = 5_000 // config.batch_size
    summary, history = report.run_pipeline(args, "imdb", data, eval_steps, args.model, extra)

    train_steps = history.get("train_steps")
    paths = history.get("paths") or {}
    validation = paths.get("validation", {})
    measured = {
        "accuracy": summary["metrics"].get("binary_accuracy"),
        "calibration": summary["metrics"].get("calibration"),
        # With the wide path: each path's own validation accuracy (Keras), the weights of the
        # combination fitted on the held-out training reviews, and the wide path's seconds.
        "deep_alone_accuracy": validation.get("deep_accuracy"),
        "wide_alone_accuracy": validation.get("wide_accuracy"),
        "wide_path_seconds": paths.get("seconds"),
        "train_examples_per_second": history.get("train_examples_per_second"),
        "fit_seconds": history.get("fit_seconds"),
        **efficiency_of(args.model, history),
        "wall_seconds": summary["wall_seconds"],
        # What `run` projected before Transform (components/cost_estimate), to compare.
        "projected_minutes": (summary.get("cost") or {}).get("projected_minutes"),
        "peak_memory_gb": report.peak_memory_gb(),
    }
    result = {
        "model": args.model,
        "preset": preset,
        "overrides": overrides,
        "train_steps": train_steps,
        "eval_examples": summary["metrics"].get("example_count"),
        "measured": measured,
        "metrics": summary["metrics"],
        "components": summary["components"],
        "history": history.get("history"),
        "paths": paths or None,
        "blessed": summary["blessed"],
    }
    measured = {key: value for key, value in measured.items() if value is not None}
    print(
        f"\nIMDB pipeline benchmark ({report.machine()}), {train_steps} training steps "
        f"({args.epochs} epochs), {int(result['eval_examples'] or 0)} validation reviews\n"
    )
    report.print_comparison(measured, REFERENCES)
    if "fraction_of_peak" in measured:
        print(
            f"\ntraining ({measured['precision']}): {measured['train_examples_per_second']} "
            f"reviews/s (validation passes included), {measured['step_gflop']} GFLOP per "
            f"step, {measured['achieved_tflops']} TFLOP/s = {measured['fraction_of_peak']:.1%} "
            f"of this machine's matmul peak ({measured['peak_tflops']} TFLOP/s, "
            "benchmarks/hardware.py)"
        )
    report.print_components(summary["components"])
    report.save("imdb_pipeline", report.result_name(args, args.model), result, REFERENCES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
