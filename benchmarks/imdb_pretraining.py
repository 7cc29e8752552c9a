"""Benchmark: masked-token pretraining of the text encoder on IMDB's own training reviews, side
by side with none, in one run (issue 77).

    .venv/bin/python -m benchmarks.imdb_pretraining [--tarball PATH] [--pretrain-epochs 0 2 4]
        [--sizes 1000 5000] [--curve-epochs 2] [--name NAME] [--set KEY=VALUE ...]

Each row is a whole IMDB pipeline (`imdb_pipeline.py`'s: the seeded 80/20 split of the 25,000
labelled training reviews, validation by TFMA on the 20%), the text encoder's default recipe
with `pretrain_epochs` set: 0 (no pretraining), then each of --pretrain-epochs. Pretraining
reads the training split's token ids only, never the validation reviews, nor any label. The
label-size curve (--sizes, `imdb_label_sizes.py`'s subsets: every validation review, the first
N training reviews in a seeded order) runs each size without pretraining and with
--curve-epochs of it, the pretraining on those N reviews' text only.

Prints and writes (benchmarks/results/imdb_pretraining/NAME.json, which the docs show) per
row: validation accuracy of the served combination (TFMA), of the encoder alone and of the
n-gram path alone (Keras, the same reviews), pretraining's steps, minutes and last masked-token
loss and accuracy, and the pipeline's minutes; the machine, as every results file.
"""

import argparse
import json
import os
import sys

from benchmarks import report
from benchmarks.imdb_label_sizes import subset
from benchmarks.imdb_pipeline import DEFAULT_TARBALL, extract

EVAL_STEPS = 5_000 // 32  # the whole validation split in batches of 32, as imdb_pipeline


def run_once(args, data: str, epochs: float, label: str) -> dict:
    """One pipeline with pretrain_epochs=`epochs`; its row's figures."""
    from pipeline.tasks import get_task

    run = argparse.Namespace(
        output=os.path.join(args.output, label),
        epochs=get_task("imdb").recipe_epochs("text_encoder"),
        beam_mode="in_memory",
        preset=None,
        overrides=[*args.overrides, f"pretrain_epochs={epochs}"],
    )
    summary, history = report.run_pipeline(run, "imdb", data, EVAL_STEPS, "text_encoder")
    pretrained = history.get("pretraining") or {}
    validation = (history.get("paths") or {}).get("validation", {})
    row = {
        "label": label,
        "pretrain_epochs": epochs,
        "train_examples": history.get("train_examples"),
        "accuracy": summary["metrics"].get("binary_accuracy"),
        "deep_alone_accuracy": validation.get("deep_accuracy"),
        "wide_alone_accuracy": validation.get("wide_accuracy"),
        "pretrain_steps": pretrained.get("steps", 0),
        "pretrain_minutes": round(pretrained.get("seconds", 0) / 60, 2),
        "pretrain_last_loss": pretrained.get("last_loss"),
        "pretrain_last_accuracy": pretrained.get("last_accuracy"),
        "fit_minutes": round((history.get("fit_seconds") or 0) / 60, 2),
        "wall_minutes": round(summary["wall_seconds"] / 60, 2),
        "blessed": summary["blessed"],
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tarball", default=DEFAULT_TARBALL)
    parser.add_argument("--pretrain-epochs", type=float, nargs="+", default=[2.0, 4.0, 8.0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 5_000])
    parser.add_argument("--curve-epochs", type=float, default=4.0)
    parser.add_argument("--output", default=os.path.join(report.RUNS_DIR, "imdb_pretraining"))
    parser.add_argument("--name", default="pretraining")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], help="KEY=VALUE, every row"
    )
    args = parser.parse_args()

    root = extract(args.tarball, os.path.join(args.output, "data"))
    rows = [run_once(args, root, 0.0, "full-none")]
    rows += [run_once(args, root, e, f"full-pretrain-{e:g}") for e in args.pretrain_epochs]
    curve = []
    for size in args.sizes:
        data = subset(root, size, os.path.join(args.output, f"data-{size}"))
        for epochs in (0.0, args.curve_epochs):
            curve.append(run_once(args, data, epochs, f"{size}-pretrain-{epochs:g}"))
    full_size = rows[0]["train_examples"]
    curve += [row for row in rows if row["pretrain_epochs"] in (0.0, args.curve_epochs)]

    def by_size(row):
        return row["train_examples"], row["pretrain_epochs"]

    def cells(row):
        return [
            row["pretrain_epochs"],
            row["pretrain_minutes"],
            row["pretrain_last_accuracy"],
            row["deep_alone_accuracy"],
            row["wide_alone_accuracy"],
            row["accuracy"],
            row["wall_minutes"],
        ]

    columns = [
        "pretraining epochs",
        "pretraining minutes",
        "masked-token accuracy",
        "encoder alone",
        "n-gram path alone",
        "served (TFMA)",
        "pipeline minutes",
    ]
    tables = [
        {
            "title": f"Validation accuracy after pretraining on the {full_size:,} training reviews",
            "columns": columns,
            "rows": [cells(row) for row in rows],
        }
    ]
    if args.sizes:
        tables.append(
            {
                "title": "Validation accuracy against labelled training reviews, with and "
                "without pretraining on their text",
                "columns": ["training reviews", *columns],
                "rows": [
                    [row["train_examples"], *cells(row)] for row in sorted(curve, key=by_size)
                ],
            }
        )
    report.save(
        "imdb_pretraining",
        args.name,
        {"overrides": report.overrides(args), "rows": rows, "curve": curve, "tables": tables},
    )
    for table in tables:
        print(f"\n{table['title']}")
        report.print_table(table["columns"], table["rows"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
