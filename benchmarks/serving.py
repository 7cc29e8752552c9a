"""Benchmark: serving latency and throughput of each registered champion, in-process and over
HTTP.

    make run run-translation run-cifar10          # the default models, registered in outputs/
    .venv/bin/python -m benchmarks.serving [--output outputs] [--names imdb-text-encoder ...]

For each registered model's champion (the registry `tfx-transformers registry` reads), on the
embedded data's inputs (a review, a German sentence, a 32x32 PNG), measures:
  - the SavedModel's raw-input signature called directly (tf.saved_model.load);
  - MLflow's pyfunc model (mlflow.pyfunc.load_model("models:/NAME@champion")), which adds
    input checks and DataFrame conversions;
  - HTTP: `tfx-transformers serve` (MLflow's scoring server, one uvicorn worker) on localhost,
    one kept-alive connection, JSON `dataframe_split` bodies;
each at batch 1 (p50 and p99 of the request latency) and batch 32 (examples per second). Writes
benchmarks/results/serving/<models>.json.
"""

import argparse
import base64
import glob
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from benchmarks import report
from pipeline.launch.job_service import free_ports

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ("imdb-text-encoder", "translation-translator", "cifar10-vit")


def example_inputs(signature: str) -> list:
    """32 raw inputs from the embedded data, as the signature takes them."""
    if signature == "classify_text":
        files = sorted(glob.glob(os.path.join(ROOT, "data/imdb/aclImdb/test/*/*.txt")))
        return [open(f, encoding="utf-8").read() for f in files[:32]]
    if signature == "translate":
        with open(os.path.join(ROOT, "data/translation/val.de"), encoding="utf-8") as f:
            return [line.strip() for line in f][:32]
    files = sorted(glob.glob(os.path.join(ROOT, "data/shapes/eval/*/*.png")))
    return [open(f, "rb").read() for f in files[:32]]


def timed(call, warmup: int, seconds: float, at_most: int) -> list:
    """Seconds per call, after `warmup` calls, for up to `seconds` or `at_most` calls."""
    for _ in range(warmup):
        call()
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < at_most and time.perf_counter() - started < seconds:
        begin = time.perf_counter()
        call()
        times.append(time.perf_counter() - begin)
    return times


def summarize(one: list, batch: list, batch_size: int) -> dict:
    ordered = sorted(one)
    return {
        "p50_ms": round(1000 * statistics.median(ordered), 2),
        "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 2),
        "batch1_calls": len(one),
        "batch32_examples_per_second": round(batch_size / statistics.median(batch), 1),
    }


def measure(call_one, call_batch, seconds: float) -> dict:
    return summarize(timed(call_one, 10, seconds, 500), timed(call_batch, 3, seconds, 100), 32)


def serve(output: str, name: str):
    (port,) = free_ports(1)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline.cli",
            "serve",
            "--output",
            output,
            "--name",
            name,
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=ROOT,
    )
    deadline = time.time() + 300
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"tfx-transformers serve --name {name} exited")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/ping")
            if connection.getresponse().status == 200:
                return process, port
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.5)


def http_call(connection, column: str, values: list):
    body = json.dumps({"dataframe_split": {"columns": [column], "data": [[v] for v in values]}})

    def call():
        connection.request("POST", "/invocations", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = response.read()
        if response.status != 200:
            raise RuntimeError(answer[:500])

    return call


def benchmark(output: str, name: str, registry, seconds: float) -> dict:
    import mlflow
    import pandas as pd
    import tensorflow as tf

    import trainer_module.serving.custom_ops  # noqa: F401  tensorflow-text's ops (WordPiece)
    from components.model_registry.mlflow_model import raw_signature
    from trainer_module.serving.contract import INPUTS

    champion = registry.by_alias(name, "champion")
    signature = raw_signature(champion["saved_model"])
    column = INPUTS[signature]
    values = example_inputs(signature)
    result = {"version": champion["version"], "signature": signature}

    function = tf.saved_model.load(champion["saved_model"]).signatures[signature]
    one, batch = tf.constant(values[:1]), tf.constant(values)
    result["saved_model"] = measure(
        lambda: function(**{column: one}), lambda: function(**{column: batch}), seconds
    )

    pyfunc = mlflow.pyfunc.load_model(f"models:/{name}@champion")
    frame_one, frame = pd.DataFrame({column: values[:1]}), pd.DataFrame({column: values})
    result["pyfunc"] = measure(
        lambda: pyfunc.predict(frame_one), lambda: pyfunc.predict(frame), seconds
    )

    wire = [base64.b64encode(v).decode() for v in values] if column == "image" else values
    process, port = serve(output, name)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        result["http"] = measure(
            http_call(connection, column, wire[:1]), http_call(connection, column, wire), seconds
        )
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--output",
        default=os.path.join(ROOT, "outputs"),
        help="the run command's output directory (its registry)",
    )
    parser.add_argument(
        "--names",
        nargs="+",
        help=f"registered models (default: those of {', '.join(NAMES)} in the registry)",
    )
    parser.add_argument(
        "--name",
        help="the results file's name (default: the models' names; a run on another machine "
        "should name it: imdb-bert-intel-amx)",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=20.0,
        help="time spent on each measurement (default: %(default)s)",
    )
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

    from components.model_registry.backends import from_config, mlflow_config
    from pipeline import configs

    registry = from_config(mlflow_config(configs.output_paths(args.output, "")["registry_dir"]))
    os.environ["MLFLOW_TRACKING_URI"] = registry.tracking_uri
    present = {row["name"] for row in registry.versions()}
    names = args.names or [n for n in NAMES if n in present]
    if not names:
        parser.error(f"no registered model in {registry.tracking_uri}: run the pipelines first")
    results = {name: benchmark(args.output, name, registry, args.seconds) for name in names}

    print(f"\nserving latency and throughput ({report.machine()})\n")
    print(f"{'model':24} {'path':12} {'p50 ms':>8} {'p99 ms':>8} {'batch 32, ex/s':>15}")
    for name, result in results.items():
        for path in ("saved_model", "pyfunc", "http"):
            r = result[path]
            print(
                f"{name:24} {path:12} {r['p50_ms']:>8} {r['p99_ms']:>8} "
                f"{r['batch32_examples_per_second']:>15}"
            )
    report.save("serving", args.name or "-".join(names), {"results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
