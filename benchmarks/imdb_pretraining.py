"""Benchmark: pretraining the text encoder on IMDB's own training reviews (masked-token
prediction, or replaced-token detection), side by side with none, in one run (issue 77).

    .venv/bin/python -m benchmarks.imdb_pretraining [--tarball PATH] [--row LABEL:K=V,...]
        [--sizes 1000 5000] [--curve-row LABEL:K=V,...] [--unlabeled-rest] [--no-full]
        [--name NAME] [--set KEY=VALUE ...]

Each row is a whole IMDB pipeline (`imdb_pipeline.py`'s: the seeded 80/20 split of the 25,000
labelled training reviews, validation by TFMA on the 20%), the text encoder's default recipe
with the row's overrides: none, then each pretraining (DEFAULT_ROWS: masked-token prediction
for 1.5, 3 and 6 passes over the training reviews). Pretraining
reads the training split's token ids only, never the validation reviews, nor any label. The
label-size curve (--sizes, `imdb_label_sizes.py`'s subsets: every validation review, the first
N training reviews in a seeded order) runs each size without pretraining and with
--curve-row's, the pretraining on those N reviews' text only (the same epochs: fewer steps);
with --unlabeled-rest, also --curve-row's pretraining on the N reviews and, as unlabelled texts
(aclImdb's train/unsup/ layout), the other 19,963 - N training reviews: what a pile of
unlabelled text adds when labels are few.

Prints and writes (benchmarks/results/imdb_pretraining/NAME.json, which the docs show) per
row: validation accuracy of the served combination (TFMA), of the encoder alone and of the
n-gram path alone (Keras, the same reviews), pretraining's steps, minutes and last accuracy
(masked tokens predicted, or tokens told replaced or not), and the pipeline's minutes; the
machine, as every results file.
"""

import argparse
import json
import os
import sys

from benchmarks import report
from benchmarks.imdb_label_sizes import subset
from benchmarks.imdb_pipeline import DEFAULT_TARBALL, extract

EVAL_STEPS = 5_000 // 32  # the whole validation split in batches of 32, as imdb_pipeline


def parse_row(spec: str) -> tuple:
    """`LABEL[:KEY=VALUE,...]` -> (label, overrides as the CLI reads them)."""
    from pipeline.options import parse_override

    label, _, settings = spec.partition(":")
    return label, dict(parse_override(kv) for kv in settings.split(",") if kv)


def run_once(args, data: str, label: str, overrides: dict) -> dict:
    """One pipeline with the rows' overrides on top of --set; its row's figures."""
    from pipeline.tasks import get_task

    run = argparse.Namespace(
        output=os.path.join(args.output, label),
        epochs=get_task("imdb").recipe_epochs("text_encoder"),
        beam_mode="in_memory",
        preset=None,
        overrides=args.overrides,
    )
    summary, history = report.run_pipeline(run, "imdb", data, EVAL_STEPS, "text_encoder", overrides)
    config = history.get("config", {})
    pretrained = history.get("pretraining") or {}
    validation = (history.get("paths") or {}).get("validation", {})
    row = {
        "label": label,
        "pretrain_objective": config.get("pretrain_objective") if pretrained else None,
        "pretrain_epochs": config.get("pretrain_epochs", 0.0),
        "train_examples": history.get("train_examples"),
        "accuracy": summary["metrics"].get("binary_accuracy"),
        "deep_alone_accuracy": validation.get("deep_accuracy"),
        "wide_alone_accuracy": validation.get("wide_accuracy"),
        "pretrain_steps": pretrained.get("steps", 0),
        "unlabeled_texts": pretrained.get("unlabeled_texts", 0),
        "pretrain_minutes": round(pretrained.get("seconds", 0) / 60, 2),
        "pretrain_last_loss": pretrained.get("last_loss"),
        "pretrain_last_accuracy": pretrained.get("last_accuracy"),
        "fit_minutes": round((history.get("fit_seconds") or 0) / 60, 2),
        "wall_minutes": round(summary["wall_seconds"] / 60, 2),
        "blessed": summary["blessed"],
    }
    print(json.dumps(row), flush=True)
    return row


DEFAULT_ROWS = [  # about 4, 8 and 16 minutes of pretraining on a Zen 4 (0.25 s a step)
    "none",
    "masked-1.5:pretrain_objective=masked,pretrain_epochs=1.5",
    "masked-3:pretrain_objective=masked,pretrain_epochs=3",
    "masked-6:pretrain_objective=masked,pretrain_epochs=6",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tarball", default=DEFAULT_TARBALL)
    parser.add_argument(
        "--row",
        action="append",
        help=f"LABEL[:KEY=VALUE,...], repeatable (default: {DEFAULT_ROWS})",
    )
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 5_000])
    parser.add_argument(
        "--curve-row",
        default="masked-3:pretrain_objective=masked,pretrain_epochs=3",
        help="the pretraining of the label-size curve, beside none",
    )
    parser.add_argument(
        "--unlabeled-rest",
        action="store_true",
        help="also pretrain each size on the other training reviews as unlabelled texts",
    )
    parser.add_argument(
        "--no-full", action="store_true", help="the label-size curve only (no full-data rows)"
    )
    parser.add_argument("--output", default=os.path.join(report.RUNS_DIR, "imdb_pretraining"))
    parser.add_argument("--name", default="pretraining")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], help="KEY=VALUE, every row"
    )
    args = parser.parse_args()

    root = extract(args.tarball, os.path.join(args.output, "data"))
    rows: list = []
    curve: list = []
    curve_label, curve_overrides = parse_row(args.curve_row)
    for label, overrides in [] if args.no_full else map(parse_row, args.row or DEFAULT_ROWS):
        rows.append(run_once(args, root, f"full-{label}", overrides))
        save(args, rows, curve, curve_label)  # each row as it comes: a long run loses none
    for size in args.sizes:
        data = subset(root, size, os.path.join(args.output, f"data-{size}"))
        runs = [(data, "none", {}), (data, curve_label, curve_overrides)]
        if args.unlabeled_rest:
            with_rest = subset(
                root, size, os.path.join(args.output, f"data-{size}-unsup"), unlabeled=True
            )
            runs.append((with_rest, f"{curve_label}+unlabeled", curve_overrides))
        for folder, label, overrides in runs:
            curve.append(run_once(args, folder, f"{size}-{label}", overrides))
            save(args, rows, curve, curve_label)
    for table in save(args, rows, curve, curve_label):
        print(f"\n{table['title']}")
        report.print_table(table["columns"], table["rows"])
    return 0


COLUMNS = [
    "pretraining",
    "epochs of it",
    "pretraining minutes",
    "its last accuracy",
    "encoder alone",
    "n-gram path alone",
    "served (TFMA)",
    "pipeline minutes",
]


def cells(row: dict) -> list:
    unlabeled = row.get("unlabeled_texts", 0)
    return [
        (row["pretrain_objective"] or "none")
        + (f" + {unlabeled:,} unlabelled" if unlabeled else ""),
        row["pretrain_epochs"],
        row["pretrain_minutes"],
        row["pretrain_last_accuracy"],
        row["deep_alone_accuracy"],
        row["wide_alone_accuracy"],
        row["accuracy"],
        row["wall_minutes"],
    ]


def save(args, rows: list, curve: list, curve_label: str) -> list:
    """Writes the results file of the rows so far; returns its tables."""
    tables = []
    if rows:
        tables.append(
            {
                "title": "Validation accuracy after pretraining on the "
                f"{rows[0]['train_examples']:,} training reviews",
                "columns": COLUMNS,
                "rows": [cells(row) for row in rows],
            }
        )
    full = [row for row in rows if row["label"] in ("full-none", f"full-{curve_label}")]
    if curve:
        tables.append(
            {
                "title": "Validation accuracy against labelled training reviews, with and "
                "without pretraining on their text",
                "columns": ["training reviews", *COLUMNS],
                "rows": [
                    [row["train_examples"], *cells(row)]
                    for row in sorted(
                        curve + full,
                        key=lambda r: (
                            r["train_examples"],
                            r["pretrain_epochs"],
                            r.get("unlabeled_texts", 0),
                        ),
                    )
                ],
            }
        )
    report.save(
        "imdb_pretraining",
        args.name,
        {"overrides": report.overrides(args), "rows": rows, "curve": curve, "tables": tables},
    )
    return tables


if __name__ == "__main__":
    sys.exit(main())
