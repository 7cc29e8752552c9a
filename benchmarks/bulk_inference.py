"""Benchmark: bulk inference (`predict --input`) with and without length-sorted batches.

    .venv/bin/python -m benchmarks.bulk_inference --saved-model DIR --data DIR
        [--batch-size 64] [--windows 1 16] [--repeats 3] [--name NAME]

`predict --input` reads `SORT_WINDOW` batches of lines ahead and predicts their texts in
batches of similar length (pipeline/predict.py: predict_lines), so that a batch pads, and a
translator decodes, to about its own length rather than to the longest of random lines. This
times it on a pushed translator over Multi30k's validation sources (val.de.gz, in file order),
for each window (1: batches in input order, as without sorting), alternately, `--repeats`
times each, in this process's TensorFlow threads, checks that every window gives the same
answers in the same order, and writes sentences per second (the best of the repeats) to
benchmarks/results/bulk_inference/<name>.json.
"""

import argparse
import gzip
import io
import json
import os
import sys
import time

from benchmarks import report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saved-model", required=True, help="a pushed translator")
    parser.add_argument("--data", required=True, help="Multi30k (val.de.gz)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--windows", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--name", default="translator-val")
    args = parser.parse_args()

    from pipeline.predict import load_model, predict_lines

    with gzip.open(os.path.join(args.data, "val.de.gz"), "rt", encoding="utf-8") as f:
        lines = [json.dumps({"source": line.strip()}) + "\n" for line in f if line.strip()]
    model, model_dir = load_model(args.saved_model)
    list(predict_lines(model, io.StringIO("".join(lines[:64])), args.batch_size))  # trace

    seconds: dict[int, list[float]] = {window: [] for window in args.windows}
    answers = {}
    for _ in range(args.repeats):
        for window in args.windows:
            started = time.perf_counter()
            answers[window] = list(
                predict_lines(model, io.StringIO("".join(lines)), args.batch_size, window)
            )
            seconds[window].append(time.perf_counter() - started)
    baseline = args.windows[0]
    same = all(answers[w] == answers[baseline] for w in args.windows)
    columns = ["window (batches read ahead)", "sentences/s", f"against window {baseline}"]
    rows = [
        [
            str(window),
            f"{len(lines) / min(seconds[window]):.1f}",
            f"{min(seconds[baseline]) / min(seconds[window]):.2f}",
        ]
        for window in args.windows
    ]
    print(
        f"\npredict --input, {len(lines)} Multi30k val sources, batches of {args.batch_size} "
        f"({report.machine()}); the same answers in every window: {same}\n"
    )
    report.print_table(columns, rows)
    if not same:
        print("the windows' answers differ", file=sys.stderr)
        return 1
    report.save(
        "bulk_inference",
        args.name,
        {
            "title": "Bulk inference (predict --input): length-sorted batches or input order",
            "model": os.path.basename(os.path.dirname(model_dir.rstrip("/"))),
            "tables": [
                {
                    "title": (
                        f"{len(lines)} Multi30k val sources in file order, batches of "
                        f"{args.batch_size}, TensorFlow's default threads; best of "
                        f"{args.repeats}, windows run alternately"
                    ),
                    "columns": columns,
                    "rows": rows,
                }
            ],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
