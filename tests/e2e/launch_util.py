"""Compiles a task's cloud job as `tfx-transformers compile` does, and launches it with
`tfx-transformers launch` in its own process, as a user runs them; the registry is a real
MLflow tracking server on this machine's network address, as a team's would be on theirs (a
cloud job refuses a local store and a loopback address)."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
from typing import Mapping, Optional

from pipeline.cloud import CloudConfig
from pipeline.kubeflow_runner import build_cloud_pipeline, compile_pipeline
from pipeline.options import PipelineOptions
from tests.ports import host_address
from tests.tracking_server import TrackingServer

# The job: a demo project and bucket, MLflow as the registry, the pipeline image by
# name only (launch --image names the image each task runs in).
CLOUD = {
    "GOOGLE_CLOUD_PROJECT": "demo",
    "PIPELINE_ROOT": "gs://demo-bucket/root",
    "PIPELINE_IMAGE": "example/tfx-transformers:1",
    "MODEL_REGISTRY": "mlflow",
}
BUCKET = "demo-bucket"


def tracking_server(folder: pathlib.Path) -> TrackingServer:
    """`mlflow server` on this machine's network address, as a cluster's service is on its
    own (a compiled job refuses loopback), a SQLite store, artifacts proxied by the server;
    started; stop() it after."""
    server = TrackingServer(
        f"sqlite:///{folder}/mlflow.db", str(folder / "artifacts"), host=host_address()
    )
    return server.start()


def compile_job(
    root: pathlib.Path,
    task: str,
    tracking_uri: str,
    environ: Optional[Mapping[str, str]] = None,
    target: str = "vertex",
    **options,
) -> pathlib.Path:
    """The task's job compiled for `target` with CLOUD (and `environ`), registering in the
    tracking server at `tracking_uri`; the options of `compile` (tiny presets keep launches
    short)."""
    environ = {**CLOUD, "MLFLOW_TRACKING_URI": tracking_uri, **(environ or {})}
    cloud = CloudConfig.from_environment(environ, target=target)
    pipeline = build_cloud_pipeline(PipelineOptions(task=task, **options), cloud)
    path = root / f"{pipeline.pipeline_info.pipeline_name}-{target}.json"
    compile_pipeline(pipeline, cloud, str(path))
    return path


def data_in_bucket(output: pathlib.Path, source: pathlib.Path, name: str) -> str:
    """`source` copied into the launch's bucket (as `gsutil cp -r` would put it there); the
    gs:// URI a job's data_dir takes for it."""
    target = output / "gs" / BUCKET / "data" / name
    if not target.exists():
        shutil.copytree(source, target)
    return f"gs://{BUCKET}/data/{name}"


def launch(job: pathlib.Path, output: pathlib.Path, *args, env=None, check=True) -> dict:
    """`tfx-transformers launch JOB --output OUTPUT ARGS...`; its JSON summary, with what it
    printed on stderr under "stderr"."""
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "launch", str(job), "--output", str(output)]
        + [str(a) for a in args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    lines = result.stdout.strip().splitlines()
    summary = json.loads(lines[-1]) if lines else {}
    summary["stderr"] = result.stderr
    summary["exit_code"] = result.returncode
    assert not check or result.returncode == 0, result.stderr[-4000:]
    return summary


def registered_versions(tracking_uri: str, name: str) -> list:
    """[(version, aliases)] of `name` in the registry at `tracking_uri`."""
    from components.model_registry.backends import from_config, mlflow_config

    registry = from_config(mlflow_config("", tracking_uri=tracking_uri))
    return [(row["version"], row["aliases"]) for row in registry.versions(name)]
