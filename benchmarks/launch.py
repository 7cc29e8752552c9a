"""Benchmark: a compiled job launched here against `make run` on the same task and data.

    .venv/bin/python -m benchmarks.launch [--task imdb] [--repeats 1] [--image IMAGE] [--name NAME]

Side by side, each into a fresh output: `tfx-transformers run --task T` (what `make run` runs
for imdb) and the task's job compiled for Vertex AI (a demo project and bucket,
MODEL_REGISTRY=mlflow on a tracking server this benchmark starts on loopback, the default
VERTEX_TRAINING=1) launched with `tfx-transformers launch --param data_dir=<the embedded
data>`; the same launch with `--fresh-processes` (every task from a new interpreter, as a
container starts); and with `--image IMAGE` (every task, and the training job's replica, in a
container of the pipeline image built by `make image`, its data copied into the bucket). The
targets: a launch at most twice `make run`'s time, an in-image launch at most four times.
Writes benchmarks/results/launch/<name>.json.
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
IMAGE_TARGET_RATIO = 4.0  # a launch inside the image at most four times (issue 85)
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
    parser.add_argument(
        "--image", default="localhost/tfx-transformers:dev", help="empty: no in-image launch"
    )
    parser.add_argument("--name", default=f"{report.hardware_name()}")
    args = parser.parse_args(argv)
    from tests.tracking_server import TrackingServer

    cli = [sys.executable, "-m", "pipeline.cli"]
    data = str(TASKS[args.task].default_data_dir)
    rows: list = []
    best: dict = {}
    for repeat in range(args.repeats):
        work = tempfile.mkdtemp(prefix="launch-benchmark-")
        server = TrackingServer(f"sqlite:///{work}/server/mlflow.db", f"{work}/server/art")
        server.start()
        env = {
            **os.environ,
            **CLOUD,
            "MLFLOW_TRACKING_URI": server.url,
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
        if args.image:
            bucket_data = f"{work}/image/gs/demo-bucket/data/{args.task}"
            shutil.copytree(data, bucket_data)
            runs["launch --image"] = [
                *cli,
                "launch",
                job,
                "--output",
                f"{work}/image",
                "--param",
                f"data_dir=gs://demo-bucket/data/{args.task}",
                "--image",
                args.image,
            ]
        try:
            for label, command in runs.items():
                seconds, summary = timed(command, env)
                print(f"repeat {repeat + 1}, {label}: {seconds:.1f} s", flush=True)
                rows.append([repeat + 1, label, round(seconds, 1)])
                if label not in best or seconds < best[label][0]:
                    best[label] = (seconds, summary)
        finally:
            server.stop()
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
    references = [["launch against run", "launch / run", TARGET_RATIO, "the target: at most 2x"]]
    if "launch --image" in best:
        measured["launch --image seconds"] = round(best["launch --image"][0], 1)
        measured["launch --image / run"] = round(best["launch --image"][0] / run_seconds, 2)
        references.append(
            [
                "launch in the image against run",
                "launch --image / run",
                IMAGE_TARGET_RATIO,
                "the target: at most 4x",
            ]
        )
    tasks = best["launch"][1]["tasks"]
    fresh_tasks = best["launch --fresh-processes"][1]["tasks"]
    image_tasks = best.get("launch --image", (0, {"tasks": {}}))[1]["tasks"]
    report.save(
        "launch",
        args.name,
        {
            "title": f"A compiled {args.task} job launched here against `run` on the same data",
            "task": args.task,
            "measured": measured,
            "references": references,
            "tables": [
                {
                    "title": "Each command (wall seconds, in a fresh output)",
                    "columns": ["repeat", "command", "seconds"],
                    "rows": rows,
                },
                {
                    "title": "The best launch's tasks (seconds; --fresh-processes and --image "
                    "beside)",
                    "columns": ["task", "state", "seconds", "fresh-processes", "image"],
                    "rows": [
                        [
                            name,
                            info["state"],
                            info["seconds"],
                            fresh_tasks[name]["seconds"],
                            image_tasks.get(name, {}).get("seconds"),
                        ]
                        for name, info in tasks.items()
                    ],
                },
            ],
        },
    )
    print(json.dumps(measured))


if __name__ == "__main__":
    main()
