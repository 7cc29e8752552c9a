"""Benchmark: a real multi-class task, IMDB's own ratings, through the whole pipeline.

    .venv/bin/python -m benchmarks.imdb_ratings [--tarball PATH | --data DIR] [--output DIR]
        [--model text_encoder|bert] [--bert-preset DIR] [--epochs E] [--preset P]

Each review of the 25,000 labelled training reviews carries its reviewer's rating in its file
name (`ID_RATING.txt`: 1-4 negative, 7-10 positive). The benchmark writes them as a
`text,label` CSV of four classes, `1-2`, `3-4`, `7-8` and `9-10`, which the pipeline reads as
any user's multi-class CSV: a seeded 20% hash split is the validation split (the 25,000 test
reviews stay unseen), the head has four classes, the n-gram path is one-vs-rest (`--set
ngram_buckets=0`: none), and TFMA computes accuracy, per-class precision, recall and F1 and their
macro averages. Prints both beside the chance and majority baselines (and each path's own
accuracy, with the n-gram path) and writes them to benchmarks/results/imdb_ratings/<name>.json.
"""

import argparse
import collections
import csv
import os
import re
import sys

from benchmarks import report
from benchmarks.imdb_pipeline import DEFAULT_TARBALL, extract

BUCKETS = {1: "1-2", 2: "1-2", 3: "3-4", 4: "3-4", 7: "7-8", 8: "7-8", 9: "9-10", 10: "9-10"}
FILE_NAME = re.compile(r"^(?P<id>\d+)_(?P<rating>\d+)\.txt$")


def write_ratings_csv(aclimdb: str, folder: str) -> collections.Counter:
    """`folder`/ratings.csv of the training reviews under `aclimdb` (train/{pos,neg}), labelled
    by rating bucket; returns the count per class."""
    os.makedirs(folder, exist_ok=True)
    counts: collections.Counter = collections.Counter()
    root = (
        os.path.join(aclimdb, "aclImdb")
        if os.path.isdir(os.path.join(aclimdb, "aclImdb"))
        else aclimdb
    )
    with open(os.path.join(folder, "ratings.csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label", "rating", "id"])
        for side in ("neg", "pos"):
            directory = os.path.join(root, "train", side)
            for name in sorted(os.listdir(directory)):
                match = FILE_NAME.match(name)
                if not match:
                    continue
                rating = int(match["rating"])
                with open(os.path.join(directory, name), encoding="utf-8") as review:
                    text = review.read()
                label = BUCKETS[rating]
                counts[label] += 1
                writer.writerow([text, label, rating, f"train/{side}/{name[:-4]}"])
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tarball", default=DEFAULT_TARBALL)
    parser.add_argument("--data", help="an extracted aclImdb tree (instead of --tarball)")
    parser.add_argument("--model", default="text_encoder", choices=["text_encoder", "bert"])
    parser.add_argument("--bert-preset", help="with --model bert: a checkpoint folder")
    from pipeline.tasks import get_task

    report.add_pipeline_arguments(parser, "imdb_ratings", None, None)
    args = parser.parse_args()
    if args.epochs is None:  # the binary task's recipe for the family
        args.epochs = get_task("imdb").recipe_epochs(args.model)
    aclimdb = args.data or extract(args.tarball, os.path.join(args.output, "data"))
    ratings = os.path.join(args.output, "ratings")
    counts = write_ratings_csv(aclimdb, ratings)
    extra = {"backbone_preset": os.path.abspath(args.bert_preset)} if args.bert_preset else {}
    config = report.model_config("imdb", args, args.model)
    summary, history = report.run_pipeline(
        args, "imdb", ratings, 5_000 // config.batch_size, args.model, extra
    )
    metrics = summary["metrics"]
    total = sum(counts.values())
    paths = history.get("paths") or {}
    measured = {
        "accuracy": metrics.get("sparse_categorical_accuracy"),
        # With the n-gram path: each path's own validation accuracy (Keras) and the weights of
        # the combination fitted on the held-out training reviews (deep, wide, intercepts).
        "deep_alone_accuracy": paths.get("validation", {}).get("deep_accuracy"),
        "wide_alone_accuracy": paths.get("validation", {}).get("wide_accuracy"),
        "combination_weights": (paths.get("combination") or {}).get("weights"),
        "wide_path_seconds": paths.get("seconds"),
        "macro_f1": metrics.get("f1_score"),
        "macro_precision": metrics.get("precision"),
        "macro_recall": metrics.get("recall"),
        **{
            f"f1 {name}": metrics.get(f"f1_score (class_id={i})")
            for i, name in enumerate(sorted(counts, key=lambda n: int(n.split("-")[0])))
        },
        "fit_seconds": history.get("fit_seconds"),
        "wall_seconds": summary["wall_seconds"],
        "peak_memory_gb": report.peak_memory_gb(),
    }
    references = [
        ("validation accuracy", "accuracy", 0.25, "baseline: chance over four classes"),
        (
            "validation accuracy",
            "accuracy",
            round(max(counts.values()) / total, 4),
            "baseline: always the largest class",
        ),
        ("macro F1", "macro_f1", 0.25, "baseline: chance (uniform guesses)"),
    ]
    result = {
        "title": f"IMDB ratings in four classes ({args.model}, "
        + ("one-vs-rest n-gram path" if config.ngram_buckets else "no n-gram path")
        + (f", {args.epochs:g} epoch{'s' if args.epochs != 1 else ''})"),
        "model": args.model,
        "preset": args.preset or ("default" if args.model == "bert" else "small"),
        "overrides": report.overrides(args),
        "classes": dict(sorted(counts.items())),
        "train_steps": history.get("train_steps"),
        "eval_examples": metrics.get("example_count"),
        "measured": measured,
        "metrics": metrics,
        "components": summary["components"],
        "blessed": summary["blessed"],
    }
    measured = {key: value for key, value in measured.items() if value is not None}
    print(
        f"\nIMDB ratings benchmark ({report.machine()}), four classes {dict(counts)}, "
        f"{int(result['eval_examples'] or 0)} validation reviews\n"
    )
    report.print_comparison(measured, references)
    report.print_components(summary["components"])
    report.save("imdb_ratings", report.result_name(args, args.model), result, references)
    return 0


if __name__ == "__main__":
    sys.exit(main())
