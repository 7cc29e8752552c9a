"""The measured speeds the cost projection uses, written from the default recipes' results
files (benchmarks/defaults.py), and how close the projection comes.

    .venv/bin/python -m benchmarks.speeds            # rewrite the speeds file
    .venv/bin/python -m benchmarks.speeds --check    # exit 1 if it differs from the results
    .venv/bin/python -m benchmarks.speeds --backtest [--name NAME]
    .venv/bin/python -m benchmarks.speeds --embedded NAME   # measure the fixed costs

`--backtest` projects each default run from the other machine kinds' runs alone (as a run on
an unmeasured machine kind is projected) and compares the projection with the run's pipeline
minutes; `--name` writes the table as benchmarks/results/cost_projection/NAME.json.
`--embedded NAME` runs each task's default family on its embedded corpus (`tfx-transformers
run`, a fresh output each) and writes benchmarks/results/embedded_corpus/NAME.json: a run's
seconds beyond training on a few hundred examples, the fixed part of the other steps' cost.
"""

import argparse
import json
import sys

from benchmarks import report
from benchmarks.defaults import EMBEDDED_RESULTS, default_records, load
from components.cost_estimate import estimate
from pipeline.tasks import get_task
from trainer_module.families import get_family


def speed_row(task: str, family: str, name: str, record: dict) -> dict:
    """What the projection needs of one default run."""
    preset = record.get("preset") or get_family(family).default_preset
    config = get_family(family).config(preset, record.get("overrides") or {})
    epochs = record.get("epochs") or get_task(task).recipe_epochs(family)
    components = {k: v["seconds"] for k, v in record["components"].items()}
    machine = {
        k: record["machine"].get(k)
        for k in ("cpu", "cpu_family", "cpu_model_number", "bfloat16_flags", "cores")
    }
    wall = record["measured"]["wall_seconds"]
    return {
        "task": task,
        "family": family,
        "preset": preset,
        "result": name,
        "machine": machine,
        "peak_tflops": record["measured"]["peak_tflops"],
        "precision": record["measured"].get("precision"),
        "batch_size": config.batch_size,
        "train_steps": record["train_steps"],
        "train_examples": round(record["train_steps"] * config.batch_size / epochs),
        "trainer_seconds": round(components["Trainer"], 2),
        "other_seconds": round(wall - components["Trainer"], 2),
        "fixed_seconds": fixed_seconds(task, machine),
        "pipeline_minutes": round(wall / 60, 2),
    }


def fixed_seconds(task: str, machine: dict) -> float:
    """A run's seconds beyond training on `task`'s embedded corpus, on `machine`'s kind where
    it was measured, else on the first kind measured (0 if none was)."""
    from components.cost_estimate.machine import same_kind

    measured = []
    for name in EMBEDDED_RESULTS:
        record = load(name)
        for row in record["tables"][0]["rows"]:
            if row[0] == task:
                measured.append((same_kind(record["machine"], machine), row[4] - row[5]))
    measured.sort(key=lambda m: not m[0])
    return round(measured[0][1], 2) if measured else 0.0


EMBEDDED_COLUMNS = ["task", "family", "preset", "training examples", "pipeline s", "Trainer s"]


def measure_embedded(name: str) -> None:
    """Each task's default family on its embedded corpus, through the CLI, in a fresh output."""
    import subprocess
    import tempfile

    from pipeline.tasks import TASKS

    rows = []
    for task in sorted(TASKS):
        with tempfile.TemporaryDirectory() as output:
            command = [sys.executable, "-m", "pipeline.cli", "run", "--task", task]
            done = subprocess.run(
                command + ["--output", output], capture_output=True, text=True, check=True
            )
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(
            [
                task,
                TASKS[task].default_model,
                get_family(TASKS[task].default_model).default_preset,
                summary["cost"]["train_examples"],
                summary["wall_seconds"],
                summary["components"]["Trainer"]["seconds"],
            ]
        )
        print(rows[-1], flush=True)
    report.print_table(EMBEDDED_COLUMNS, rows)
    report.save(
        "embedded_corpus",
        name,
        {
            "title": "Each task's default family on its embedded corpus (`run --task T`)",
            "tables": [{"columns": EMBEDDED_COLUMNS, "rows": rows}],
        },
    )


def speeds() -> dict:
    rows = [speed_row(*entry) for entry in default_records()]
    return {
        "written_by": "python -m benchmarks.speeds (from benchmarks/defaults.py's results files)",
        "speeds": rows,
    }


def backtest() -> list:
    """[result, machine, projected minutes from the other machines' runs, measured, ratio]."""
    rows = speeds()["speeds"]
    table = []
    for row in rows:
        others = [
            r
            for r in rows
            if (r["task"], r["family"], r["preset"]) == (row["task"], row["family"], row["preset"])
            and r is not row
        ]
        if not others:
            continue
        projected = estimate.project(
            others,
            train_examples=row["train_examples"],
            train_steps=row["train_steps"],
            batch_size=row["batch_size"],
            here=row["machine"],
        )
        table.append(
            [
                row["result"],
                f"CPU family {row['machine']['cpu_family']} model "
                f"{row['machine']['cpu_model_number']}",
                ", ".join(r["result"].split("/")[1] for r in others),
                projected.projected_minutes,
                row["pipeline_minutes"],
                round(projected.projected_minutes / row["pipeline_minutes"], 2),
            ]
        )
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--backtest", action="store_true")
    parser.add_argument("--name")
    parser.add_argument("--embedded", metavar="NAME")
    args = parser.parse_args()
    if args.embedded:
        measure_embedded(args.embedded)
        return 0
    if args.backtest:
        columns = ["default run", "machine", "projected from", "projected min", "measured min"]
        table = backtest()
        report.print_table(columns + ["projected / measured"], table)
        if args.name:
            report.save(
                "cost_projection",
                args.name,
                {
                    "title": "The cost projection against the default runs' pipeline minutes",
                    "tables": [{"columns": columns + ["projected / measured"], "rows": table}],
                },
            )
        return 0
    text = json.dumps(speeds(), indent=1) + "\n"
    if args.check:
        with open(estimate.SPEEDS_FILE, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{estimate.SPEEDS_FILE} differs: run python -m benchmarks.speeds")
                return 1
        return 0
    with open(estimate.SPEEDS_FILE, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"written {estimate.SPEEDS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
