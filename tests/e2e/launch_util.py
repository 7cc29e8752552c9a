"""Compiles a task's cloud job as `tfx-transformers compile` does, and launches it with
`tfx-transformers launch` in its own process, as a user runs them."""

import json
import os
import pathlib
import subprocess
import sys
from typing import Mapping, Optional

from pipeline.cloud import CloudConfig
from pipeline.kubeflow_runner import build_cloud_pipeline, compile_pipeline
from pipeline.options import PipelineOptions

# The job: a demo project and bucket, MLflow as the registry (its server: a local
# SQLite store), the pipeline image by name only (launch never pulls it).
CLOUD = {
    "GOOGLE_CLOUD_PROJECT": "demo",
    "PIPELINE_ROOT": "gs://demo-bucket/root",
    "PIPELINE_IMAGE": "example/tfx-transformers:1",
    "MODEL_REGISTRY": "mlflow",
}


def compile_job(
    root: pathlib.Path,
    task: str,
    environ: Optional[Mapping[str, str]] = None,
    target: str = "vertex",
    **options,
) -> pathlib.Path:
    """The task's job compiled for `target` with CLOUD (and `environ`) and the registry's
    store under `root`; the options of `compile` (tiny presets keep launches short)."""
    environ = {
        **CLOUD,
        "MLFLOW_TRACKING_URI": f"sqlite:///{root}/mlflow/mlflow.db",
        **(environ or {}),
    }
    (root / "mlflow").mkdir(parents=True, exist_ok=True)
    cloud = CloudConfig.from_environment(environ)
    pipeline = build_cloud_pipeline(PipelineOptions(task=task, **options), cloud)
    path = root / f"{pipeline.pipeline_info.pipeline_name}-{target}.json"
    compile_pipeline(pipeline, cloud, str(path), target=target)
    return path


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


def registered_versions(root: pathlib.Path, name: str) -> list:
    """[(version, aliases)] of `name` in the registry under `root`."""
    from components.model_registry.backends import from_config, mlflow_config

    registry = from_config(mlflow_config("", tracking_uri=f"sqlite:///{root}/mlflow/mlflow.db"))
    return [(row["version"], row["aliases"]) for row in registry.versions(name)]
