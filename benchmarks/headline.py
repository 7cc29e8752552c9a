"""The headline results table: each task's default recipe on its public data, per machine
kind measured (benchmarks/defaults.py), and `make test`'s minutes per machine kind. The docs'
pages show the table as `{{ defaults_table() }}` (scripts/docs_macros.py); the README, which
nothing builds, holds both between `<!-- NAME:start -->` and `<!-- NAME:end -->` lines,
written here:

    .venv/bin/python -m benchmarks.headline            # rewrite the README's table
    .venv/bin/python -m benchmarks.headline --check    # exit 1 if it differs
"""

import argparse
import os
import re
import sys

from benchmarks.defaults import DEFAULT_RESULTS, load
from benchmarks.report import REPO
from components.cost_estimate.machine import describe
from pipeline.tasks import get_task

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
    """ "AMD EPYC, CPU family 25 model 17, AVX512-BF16": what tells machines of one name apart
    (the cost projection's words for a machine, without its cores: all have two)."""
    return describe({**record["machine"], "cores": None})


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
    columns = ["task", "model", "validation figure", "pipeline minutes", "machine", "results file"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(row) + " |" for row in rows()]
    notes = "; ".join(f"{TITLES[t]}: {HELD_OUT[t]}" for t in HELD_OUT)
    return "\n".join(
        lines
        + [
            "",
            f"On validation splits held out from training ({notes}); the test sets stay "
            "unseen by every run here, and a test-set figure, where one was measured, is on "
            "its benchmarks page. Each run is the task's default recipe in a fresh output on "
            "a 2-core machine; the figures are read from its results file "
            "(`benchmarks/results/`), never typed.",
        ]
    )


def test_times() -> str:
    """`make test`'s minutes on each machine kind: its newest run there (by the date and time
    it was measured; benchmarks/results/test_suite/)."""
    import glob

    newest: dict = {}
    for path in glob.glob(os.path.join(REPO, "benchmarks", "results", "test_suite", "*.json")):
        record = load(f"test_suite/{os.path.basename(path)[: -len('.json')]}")
        kind = record["machine"].get("cpu_family"), record["machine"].get("cpu_model_number")
        minutes = (record.get("measured") or {}).get("default tier, minutes")
        order = record["date"], record.get("measured_at", ""), record["name"]
        if kind[0] and minutes and (kind not in newest or order > newest[kind][0]):
            newest[kind] = order, record
    runs = sorted(
        (record for _, record in newest.values()),
        key=lambda r: r["measured"]["default tier, minutes"],
    )
    return "; ".join(
        f"{r['measured']['default tier, minutes']:g} minutes on an {machine(r)} "
        f"({r['measured'].get('default tier, tests')} tests at `{r['commit'][:7]}`, {r['date']})"
        for r in runs
    )


BLOCKS = {"headline": table, "test-time": test_times}


def rewrite(text: str) -> str:
    """`text` with each of its generated blocks (between `<!-- NAME:start -->` and
    `<!-- NAME:end -->`) as the results files give it."""
    for name, write in BLOCKS.items():
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
        if not pattern.search(text):
            raise ValueError(f"no {start} ... {end} block")
        inner = f"\n{write()}\n" if name == "headline" else write()  # a table, or words
        block = f"{start}{inner}{end}"
        text = pattern.sub(block.replace("\\", "\\\\"), text)  # the block as it is
    return text


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
