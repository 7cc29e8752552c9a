"""The headline results table: each task's default recipe on its public data, per machine
kind measured (benchmarks/defaults.py), and `make test`'s minutes per machine kind. The docs'
pages show the table as `{{ defaults_table() }}` (scripts/docs_macros.py); the README, which
nothing builds, holds both between `<!-- NAME:start -->` and `<!-- NAME:end -->` lines,
written here:

    .venv/bin/python -m benchmarks.headline            # rewrite the README's table and figure
    .venv/bin/python -m benchmarks.headline --check    # exit 1 if either differs

The figure (`figure`: each default's validation figure against its pipeline minutes, per
machine) is docs/figures/defaults.svg, which the README and the home page show.
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


FIGURE = os.path.join("docs", "figures", "defaults.svg")  # the README's and the home page's
# A colour per machine kind (CPU family, model), in the order the figure's legend lists them.
MACHINE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


LEFT, WIDTH, TICKS = 330, 520, (1, 3, 10, 30, 100, 300)  # the axis: pixels, and minutes


def figure_x(minutes: float) -> float:
    """Where `minutes` lies on the figure's logarithmic axis."""
    import math

    return LEFT + WIDTH * math.log10(minutes) / math.log10(TICKS[-1])


def figure() -> str:
    """Each task's default: its validation figure against its pipeline minutes, a dot per
    machine kind measured on one logarithmic axis of minutes, as an SVG drawn from the results
    files (written with the README's table; deterministic, so --check compares it too)."""
    from xml.sax.saxutils import escape

    runs = []  # (row label, minutes, figure text, machine)
    for (task, family), names in DEFAULT_RESULTS.items():
        for name in names:
            record = load(name)
            key, what = FIGURES[record["benchmark"]]
            value = record["measured"][key]
            text = f"{value:.3f}" if key == "accuracy" else f"{value:.1f}"
            runs.append(
                (
                    f"{TITLES[task]}, {family}: {what}",
                    record["measured"]["wall_seconds"] / 60,
                    text,
                    machine(record),
                )
            )
    labels = list(dict.fromkeys(r[0] for r in runs))
    machines = list(dict.fromkeys(r[3] for r in runs))
    left, width, top, row, ticks = LEFT, WIDTH, 34, 44, TICKS
    height = top + row * len(labels) + 40 + 18 * len(machines)

    x = figure_x

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" height="{height}" '
        'font-family="sans-serif" font-size="12">',
        '<text x="10" y="18" font-weight="bold">Validation figure against pipeline minutes '
        "(log scale), each task's default, per machine</text>",
    ]
    for tick in ticks:
        out.append(
            f'<line x1="{x(tick):.1f}" y1="{top}" x2="{x(tick):.1f}" '
            f'y2="{top + row * len(labels)}" stroke="#ddd"/>'
            f'<text x="{x(tick):.1f}" y="{top + row * len(labels) + 14}" '
            f'text-anchor="middle">{tick}</text>'
        )
    for index, label in enumerate(labels):
        y = top + row * index + row / 2
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text>')
        for rank, (_, minutes, text, kind) in enumerate(r for r in runs if r[0] == label):
            colour = MACHINE_COLOURS[machines.index(kind) % len(MACHINE_COLOURS)]
            out.append(
                f'<circle cx="{x(minutes):.1f}" cy="{y:.1f}" r="5" fill="{colour}"/>'
                f'<text x="{x(minutes):.1f}" y="{y + (17 if rank % 2 else -9 - 6 * rank):.1f}" '
                'text-anchor="middle" '
                f'font-size="10" fill="{colour}">{text}</text>'
            )
    legend = top + row * len(labels) + 42
    out.append(f'<text x="{left}" y="{legend - 6}">pipeline minutes on a 2-core machine:</text>')
    for index, kind in enumerate(machines):
        y = legend + 18 * index + 8
        colour = MACHINE_COLOURS[index % len(MACHINE_COLOURS)]
        out.append(
            f'<circle cx="{left + 6}" cy="{y - 4}" r="5" fill="{colour}"/>'
            f'<text x="{left + 18}" y="{y}">{escape(kind)}</text>'
        )
    return "\n".join(out + ["</svg>", ""])


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
    stale = []
    for name, make in ((README, rewrite), (FIGURE, lambda _: figure())):
        path = os.path.join(REPO, name)
        text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        new = make(text)
        if new == text:
            continue
        stale.append(name)
        if not args.check:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print(f"rewritten: {name}")
    if stale and args.check:
        print(f"stale: {', '.join(stale)}: run python -m benchmarks.headline")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
