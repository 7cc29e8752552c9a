"""Benchmark: which family for which data size. The IMDB pipeline on 1,000, 5,000 and 20,000
labelled training reviews, each family's recipe, validated on the same reviews.

    .venv/bin/python -m benchmarks.imdb_label_sizes [--tarball PATH] [--sizes 1000 5000]
        [--model text_encoder --model bert] [--bert-preset DIR] [--full NAME ...] [--name NAME]

Each size keeps every review of the pipeline's validation split (the seeded hash split of the
review ids that `imdb_pipeline.py` holds out: the pipeline makes the same split of the subset)
and the first N training reviews in a second seeded hash order (balanced as the corpus is, by
chance). Epochs are each family's recipe, so a smaller set trains proportionally fewer steps:
the 1,000 and 5,000 points together cost about a third of one full run. The full-size points
are full runs of `imdb_pipeline.py`, named with `--full` (their results files) rather than
trained again.

Prints validation accuracy (TFMA) per family and size, and writes it to
benchmarks/results/imdb_label_sizes/NAME.json, which the docs plot.
"""

import argparse
import hashlib
import json
import os
import sys

from benchmarks import report
from benchmarks.imdb_pipeline import DEFAULT_TARBALL, extract
from benchmarks.recipes import bucket
from pipeline.configs import SPLIT_SEED
from pipeline.tasks.imdb import TASK as IMDB

EVAL_PERCENT = IMDB.eval_percent  # the pipeline's own split, reproduced
ORDER_SEED = 11  # the training reviews' order, of which the first N are kept


def order(review_id: str) -> str:
    return hashlib.sha256(f"{ORDER_SEED}:{review_id}".encode()).hexdigest()


def subset(aclimdb_root: str, size: int, into: str, unlabeled: bool = False) -> str:
    """A folder holding aclImdb/train/{pos,neg} links to every validation review and to the
    first `size` training reviews (by `order`); with `unlabeled`, links in aclImdb/train/unsup
    to the other training reviews, as texts without labels (`<label>-<file>`: an id is unique
    within a label folder only)."""
    train = os.path.join(aclimdb_root, "aclImdb", "train")
    reviews = [
        (label, name)
        for label in ("pos", "neg")
        for name in sorted(os.listdir(os.path.join(train, label)))
        if name.endswith(".txt")
    ]

    def review_id(label, name):
        return f"train/{label}/{name[: -len('.txt')]}"

    validation = [r for r in reviews if bucket(review_id(*r), SPLIT_SEED) >= 100 - EVAL_PERCENT]
    ordered = sorted(
        (r for r in reviews if bucket(review_id(*r), SPLIT_SEED) < 100 - EVAL_PERCENT),
        key=lambda r: order(review_id(*r)),
    )
    training, rest = ordered[:size], ordered[size:] if unlabeled else []
    for folder in ("pos", "neg", *(["unsup"] if unlabeled else [])):
        os.makedirs(os.path.join(into, "aclImdb", "train", folder), exist_ok=True)
    links = [(label, name, os.path.join(label, name)) for label, name in validation + training]
    links += [(label, name, os.path.join("unsup", f"{label}-{name}")) for label, name in rest]
    for label, name, target in links:
        link = os.path.join(into, "aclImdb", "train", target)
        if not os.path.exists(link):
            os.symlink(os.path.join(train, label, name), link)
    return into


def full_point(name: str) -> dict:
    """A full run's point from its imdb_pipeline results file."""
    with open(os.path.join(report.RESULTS_DIR, "imdb_pipeline", f"{name}.json")) as f:
        record = json.load(f)
    return {
        "model": record["model"],
        "train_reviews": 19_963,
        "accuracy": record["measured"]["accuracy"],
        "wall_minutes": round(record["measured"]["wall_seconds"] / 60, 1),
        "source": f"imdb_pipeline/{name}",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tarball", default=DEFAULT_TARBALL)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 5_000])
    parser.add_argument("--model", action="append", choices=["text_encoder", "bert"])
    parser.add_argument("--bert-preset", help="with --model bert: a checkpoint folder")
    parser.add_argument("--full", action="append", default=[], help="imdb_pipeline results")
    parser.add_argument("--output", default=os.path.join(report.RUNS_DIR, "imdb_label_sizes"))
    parser.add_argument("--name", default="label-sizes")
    args = parser.parse_args()
    from pipeline.tasks import get_task

    root = extract(args.tarball, os.path.join(args.output, "data"))
    points = [full_point(name) for name in args.full]
    for model in args.model or ["text_encoder", "bert"]:
        for size in args.sizes:
            data = subset(root, size, os.path.join(args.output, f"data-{size}"))
            run = argparse.Namespace(
                output=os.path.join(args.output, f"{model}-{size}"),
                epochs=get_task("imdb").recipe_epochs(model),
                beam_mode="in_memory",
                preset=None,
                overrides=[],
            )
            extra = {}
            if model == "bert" and args.bert_preset:
                extra = {"backbone_preset": os.path.abspath(args.bert_preset)}
            summary, _ = report.run_pipeline(run, "imdb", data, 5_000 // 32, model, extra)
            points.append(
                {
                    "model": model,
                    "train_reviews": size,
                    "accuracy": summary["metrics"].get("binary_accuracy"),
                    "wall_minutes": round(summary["wall_seconds"] / 60, 1),
                }
            )
            print(json.dumps(points[-1]), flush=True)
    points.sort(key=lambda p: (p["model"], p["train_reviews"]))
    rows = [
        [p["model"], p["train_reviews"], p["accuracy"], p["wall_minutes"], p.get("source", "")]
        for p in points
    ]
    table = {
        "title": "Validation accuracy (TFMA) against labelled training reviews",
        "columns": [
            "family",
            "training reviews",
            "validation accuracy",
            "pipeline minutes",
            "from",
        ],
        "rows": rows,
    }
    report.save("imdb_label_sizes", args.name, {"points": points, "tables": [table]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
