"""Benchmark: a compiled job launched here against `make run` on the same task and data.

    .venv/bin/python -m benchmarks.launch [--task imdb] [--repeats 1] [--name NAME]

Side by side, each into a fresh output: `tfx-transformers run --task T` (what `make run` runs
for imdb) and the task's job compiled for Vertex AI (the issue's settings: a demo project and
bucket, MODEL_REGISTRY=mlflow on a local store, the default VERTEX_TRAINING=1) launched with
`tfx-transformers launch --param data_dir=<the embedded data>`; then the same launch with
`--fresh-processes` (every task from a new interpreter, as a container starts). The target: a
launch takes at most twice `make run`'s time. Writes benchmarks/results/launch/<name>.json.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchmarks import report
from pipeline.tasks import TASKS

TARGET_RATIO = 2.0  # a launch at most twice `make run`'s time (issue 75)
CLOUD = {
    "GOOGLE_CLOUD_PROJECT": "demo",
    "PIPELINE_ROOT": "gs://demo-bucket/root",
    "PIPELINE_IMAGE": "example/tfx-transformers:1",
    "MODEL_REGISTRY": "mlflow",
}


def timed(command, env) -> tuple:
    """(seconds, the JSON summary on the last stdout line) of `command`; fails loudly."""
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed:\n{result.stderr[-3000:]}")
    return seconds, json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="imdb", choices=sorted(TASKS))
    parser.add_argument("--repeats", type=int, default=1, help="runs of each, the best kept")
    parser.add_argument("--name", default=f"{report.hardware_name()}")
    args = parser.parse_args(argv)
    cli = [sys.executable, "-m", "pipeline.cli"]
    data = str(TASKS[args.task].default_data_dir)
    rows, best = [], {}
    for repeat in range(args.repeats):
        work = tempfile.mkdtemp(prefix="launch-benchmark-")
        env = {
            **os.environ,
            **CLOUD,
            "MLFLOW_TRACKING_URI": f"sqlite:///{work}/mlflow.db",
            "TF_CPP_MIN_LOG_LEVEL": "3",
        }
        job = os.path.join(work, "job.json")
        subprocess.run(
            [*cli, "compile", "--task", args.task, "--output-file", job],
            check=True,
            capture_output=True,
            env=env,
        )
        runs = {
            "run": [*cli, "run", "--task", args.task, "--output", f"{work}/run"],
            "launch": [
                *cli,
                "launch",
                job,
                "--output",
                f"{work}/launch",
                "--param",
                f"data_dir={data}",
            ],
            "launch --fresh-processes": [
                *cli,
                "launch",
                job,
                "--output",
                f"{work}/fresh",
                "--param",
                f"data_dir={data}",
                "--fresh-processes",
            ],
        }
        for label, command in runs.items():
            seconds, summary = timed(command, env)
            print(f"repeat {repeat + 1}, {label}: {seconds:.1f} s", flush=True)
            rows.append([repeat + 1, label, round(seconds, 1)])
            if label not in best or seconds < best[label][0]:
                best[label] = (seconds, summary)
        shutil.rmtree(work, ignore_errors=True)
    run_seconds = best["run"][0]
    measured = {
        "run seconds": round(run_seconds, 1),
        "launch seconds": round(best["launch"][0], 1),
        "launch --fresh-processes seconds": round(best["launch --fresh-processes"][0], 1),
        "launch / run": round(best["launch"][0] / run_seconds, 2),
        "launch --fresh-processes / run": round(
            best["launch --fresh-processes"][0] / run_seconds, 2
        ),
    }
    tasks = best["launch"][1]["tasks"]
    fresh_tasks = best["launch --fresh-processes"][1]["tasks"]
    report.save(
        "launch",
        args.name,
        {
            "title": f"A compiled {args.task} job launched here against `run` on the same data",
            "task": args.task,
            "measured": measured,
            "references": [
                ["launch against run", "launch / run", TARGET_RATIO, "the target: at most 2x"]
            ],
            "tables": [
                {
                    "title": "Each command (wall seconds, in a fresh output)",
                    "columns": ["repeat", "command", "seconds"],
                    "rows": rows,
                },
                {
                    "title": "The best launch's tasks (seconds; --fresh-processes beside)",
                    "columns": ["task", "state", "seconds", "fresh-processes seconds"],
                    "rows": [
                        [name, info["state"], info["seconds"], fresh_tasks[name]["seconds"]]
                        for name, info in tasks.items()
                    ],
                },
            ],
        },
    )
    print(json.dumps(measured))


if __name__ == "__main__":
    main()
