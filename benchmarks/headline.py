"""The headline results table: each task's default recipe on its public data, per machine
kind measured (benchmarks/defaults.py). The docs' pages show it as `{{ defaults_table }}`
(scripts/docs_hooks.py); the README, which nothing builds, between its
`<!-- headline:start -->` and `<!-- headline:end -->` lines, written here:

    .venv/bin/python -m benchmarks.headline            # rewrite the README's table
    .venv/bin/python -m benchmarks.headline --check    # exit 1 if it differs
"""

import argparse
import os
import re
import sys

from benchmarks.defaults import DEFAULT_RESULTS, load
from benchmarks.report import REPO
from pipeline.tasks import get_task

START, END = "<!-- headline:start -->", "<!-- headline:end -->"
README = "README.md"
# benchmark -> (measured key, what it is), and each task's held-out split.
FIGURES = {
    "imdb_pipeline": ("accuracy", "accuracy"),
    "translation_pipeline": ("bleu_lowercase_tokenized", "lower-cased BLEU"),
    "cifar10_pipeline": ("accuracy", "accuracy"),
}
HELD_OUT = {
    "imdb": "a seeded 20% of IMDB's 25,000 training reviews",
    "translation": "Multi30k's 1,014 validation pairs",
    "cifar10": "a seeded 10% of CIFAR-10's 50,000 training images (JPEG copies)",
}
TITLES = {"imdb": "IMDB sentiment", "translation": "Translation de→en", "cifar10": "CIFAR-10"}


def machine(record: dict) -> str:
    """ "AMD EPYC, CPU family 25 model 17, AVX512-BF16": what tells machines of one name apart."""
    m = record["machine"]
    flags = [f.split("_")[0].upper() + "-BF16" for f in m.get("bfloat16_flags") or []]
    return ", ".join(
        [
            (m.get("cpu") or "unknown CPU").replace("(R)", "").replace(" Processor", ""),
            f"CPU family {m['cpu_family']} model {m['cpu_model_number']}"
            if m.get("cpu_family")
            else "CPU family unknown",
            " + ".join(flags) or "no bfloat16 instructions",
        ]
    )


def rows() -> list:
    out = []
    for (task, family), names in DEFAULT_RESULTS.items():
        spec = get_task(task)
        default = family == spec.default_model
        for index, name in enumerate(names):
            record = load(name)
            key, what = FIGURES[record["benchmark"]]
            model = f"`{family}`" + (" (default)" if default else "")
            first = index == 0
            out.append(
                [
                    TITLES[task] if first else "",
                    model if first else "",
                    f"{what} {record['measured'][key]:.3f}".rstrip("0")
                    if key == "accuracy"
                    else f"{what} {record['measured'][key]:.1f}",
                    f"{record['measured']['wall_seconds'] / 60:.1f}",
                    machine(record),
                    f"`{name.split('/')[1]}`",
                ]
            )
    return out


def table() -> str:
    columns = ["task", "model", "held-out figure", "pipeline minutes", "machine", "results file"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in rows()]
    notes = "; ".join(f"{TITLES[t]}: {HELD_OUT[t]}" for t in HELD_OUT)
    return "\n".join(
        lines
        + [
            "",
            f"Held out from training ({notes}). Each run is the task's default recipe in a "
            "fresh output on a 2-core machine; the figures are read from its results file "
            "(`benchmarks/results/`), never typed.",
        ]
    )


def rewrite(text: str) -> str:
    """`text` with the table between its START and END lines as the results files give it."""
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"no {START} ... {END} block")
    return pattern.sub(lambda _: f"{START}\n{table()}\n{END}", text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    path = os.path.join(REPO, README)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    new = rewrite(text)
    if new == text:
        return 0
    if args.check:
        print(f"the table in {README} is stale: run python -m benchmarks.headline")
        return 1
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    print(f"rewritten: {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
