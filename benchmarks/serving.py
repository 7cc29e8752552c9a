"""Benchmark: serving latency and throughput of each registered champion, in-process and over
HTTP, through each of its serving runtimes.

    make run run-translation run-cifar10          # the default models, registered in outputs/
    .venv/bin/python -m benchmarks.serving [--output outputs] [--names imdb-text-encoder ...]

For each registered model's champion (the registry `tfx-transformers registry` reads), on the
embedded data's inputs (a review, a German sentence, a 32x32 PNG), measures, for each runtime
that passed its check (trainer_module/serving/runtimes.py: the SavedModel, ONNX Runtime float32
and int8; the SavedModel alone for an export without runtimes):
  - `<runtime>, in-process`: runtimes.Served called directly (what `predict` runs);
  - `<runtime>, http`: `tfx-transformers serve --runtime <runtime>` (one uvicorn worker) on
    localhost, one kept-alive connection, JSON `dataframe_split` bodies (answered by the model
    directly: pipeline/serving_app.py);
and, as the baseline, `savedmodel, http via MLflow's app`: the same body with an `index`, which
MLflow's scoring app parses into a DataFrame and enforces the schema of (what every request
took before the direct path), and `savedmodel, pyfunc`: MLflow's loader. Each at batch 1 (p50
and p99 of the request latency) and batch 32 (examples per second); the runs of one model are
interleaved with nothing else running. Writes benchmarks/results/serving/<models>.json.
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


def serve(output: str, name: str, runtime: str = "auto"):
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
            "--runtime",
            runtime,
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


def http_call(connection, column: str, values: list, through_mlflow: bool = False):
    """One POST of `values`; `through_mlflow`: with a `dataframe_split` index, which only
    MLflow's scoring app takes (pipeline/serving_app.py answers the plain form itself)."""
    split: dict = {"columns": [column], "data": [[v] for v in values]}
    if through_mlflow:
        split["index"] = list(range(len(values)))
    body = json.dumps({"dataframe_split": split})

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
    from trainer_module.serving import runtimes
    from trainer_module.serving.contract import INPUTS

    champion = registry.by_alias(name, "champion")
    export = champion["saved_model"]
    signature = raw_signature(export)
    column = INPUTS[signature]
    values = example_inputs(signature)
    manifest = runtimes.read_manifest(export)
    result: dict = {"version": champion["version"], "signature": signature}
    if manifest:
        result["chosen"] = manifest["chosen"]

    loaded = tf.saved_model.load(export)
    for runtime in runtimes.validated(manifest):
        served = runtimes.Served(loaded, export, runtime)
        result[f"{runtime}, in-process"] = measure(
            lambda served=served: served(values[:1]), lambda served=served: served(values), seconds
        )

    pyfunc = mlflow.pyfunc.load_model(f"models:/{name}@champion")
    frame_one, frame = pd.DataFrame({column: values[:1]}), pd.DataFrame({column: values})
    result["savedmodel, pyfunc"] = measure(
        lambda: pyfunc.predict(frame_one), lambda: pyfunc.predict(frame), seconds
    )

    wire = [base64.b64encode(v).decode() for v in values] if column == "image" else values
    for runtime in runtimes.validated(manifest):
        process, port = serve(output, name, runtime)
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            one, batch = wire[:1], wire
            result[f"{runtime}, http"] = measure(
                http_call(connection, column, one), http_call(connection, column, batch), seconds
            )
            if runtime == runtimes.SAVED_MODEL:
                result["savedmodel, http via MLflow's app"] = measure(
                    http_call(connection, column, one, through_mlflow=True),
                    http_call(connection, column, batch, through_mlflow=True),
                    seconds,
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
    print(f"{'model':24} {'path':36} {'p50 ms':>8} {'p99 ms':>8} {'batch 32, ex/s':>15}")
    for name, result in results.items():
        baseline = result["savedmodel, http via MLflow's app"]["p50_ms"]
        for path, r in result.items():
            if isinstance(r, dict):
                print(
                    f"{name:24} {path:36} {r['p50_ms']:>8} {r['p99_ms']:>8} "
                    f"{r['batch32_examples_per_second']:>15} "
                    f"{r['p50_ms'] / baseline:>6.2f}x MLflow's app"
                )
    report.save("serving", args.name or "-".join(names), {"results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
