"""`tfx-transformers serve`: a registered model version, or a model folder, behind MLflow's own
scoring server (its FastAPI app under uvicorn, as `mlflow models serve` runs it), which answers
`POST /invocations` with the pyfunc model of components/model_registry/pyfunc_model.py, within
the request limits of pipeline/serving_app.py."""

import dataclasses
import glob
import hashlib
import os
import re
import shutil
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

from components.model_registry.backends import TRACKING_URI_ENV, existing_mlflow_config, from_config
from pipeline import configs, serving_app
from trainer_module.serving import contract, runtimes


@dataclasses.dataclass(frozen=True)
class Serving:
    """What to start: MLflow's command line, its environment, and what it serves."""

    argv: List[str]
    env: Dict[str, str]
    model_uri: str
    version: str
    url: str
    limits: Dict[str, int]
    tracking_uri: Optional[str]  # the registry read; None for a folder
    runtime: str  # what answers (runtimes.py), or "auto" where the export was out of reach

    def describe(self) -> dict:
        return {
            "model_uri": self.model_uri,
            "version": self.version,
            "runtime": self.runtime,
            "url": self.url,
            "tracking_uri": self.tracking_uri,
            "limits": self.limits,
            # TensorFlow's intra-op threads per worker, as the environment gives them (0: one
            # per core).
            "threads_per_op": int(self.env.get("TF_NUM_INTRAOP_THREADS", 0)),
        }


MODEL_URI = re.compile(r"^models:/(?P<name>[^/@]+)(?:@(?P<alias>[^/@]+)|/(?P<version>\d+))$")


def parse_model_uri(uri: str) -> Tuple[str, Optional[str], Optional[str]]:
    """`models:/NAME@ALIAS` or `models:/NAME/VERSION` (MLflow's) -> (name, alias, version)."""
    match = MODEL_URI.match(uri)
    if not match:
        raise ValueError(
            f"{uri!r} is not a registered model's URI: models:/NAME@ALIAS or models:/NAME/VERSION"
        )
    return match["name"], match["alias"], match["version"]


def registered_saved_model(output: str, uri: str) -> str:
    """The pushed SavedModel folder of the version `uri` names, in the registry `serve`
    reads (MLFLOW_TRACKING_URI, else the local one under `output`)."""
    name, alias, version = parse_model_uri(uri)
    registry = from_config(existing_mlflow_config(configs.output_paths(output, "")["registry_dir"]))
    pick_name(registry, name)
    found = registry.show(name, version) if version else registry.by_alias(name, alias)
    path = found.get("saved_model", "")
    if not path:
        raise FileNotFoundError(f"{uri}: version {found['version']} names no pushed SavedModel")
    return path


def packaged_folder(folder: str) -> Tuple[str, str]:
    """(an MLflow Model folder, the folder it serves) for `folder`: `folder` itself when it is
    one (it has an `MLmodel`, as a registered version's artifacts do); for a SavedModel
    folder, or a folder of numbered versions (serving_model/NAME: its newest, as `predict`
    takes), the MLflow Model that the registry would hold for it
    (components/model_registry/mlflow_model.py), written once per SavedModel under the
    temporary directory and reused while the SavedModel is unchanged."""
    from components.model_registry import mlflow_model
    from pipeline.predict import resolve_model_dir

    if os.path.isfile(os.path.join(folder, "MLmodel")):
        return os.path.abspath(folder), folder
    try:
        saved_model = resolve_model_dir(folder)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{folder}: not a model folder (a SavedModel, a folder of numbered SavedModel "
            "versions, or an MLflow Model)"
        ) from None
    stat = os.stat(os.path.join(saved_model, "saved_model.pb"))
    key = f"{os.path.realpath(saved_model)}|{stat.st_mtime_ns}|{stat.st_size}".encode()
    packaged = os.path.join(
        tempfile.gettempdir(), "tfx-transformers-serve", hashlib.sha256(key).hexdigest()[:16]
    )
    if not os.path.isfile(os.path.join(packaged, "MLmodel")):
        os.makedirs(os.path.dirname(packaged), exist_ok=True)
        partial = f"{packaged}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        mlflow_model.save(saved_model, partial)  # raises naming one without a raw signature
        try:
            os.rename(partial, packaged)  # whole, or not there: a killed packaging is redone
        except OSError:  # another `serve` of the same SavedModel finished first
            shutil.rmtree(partial, ignore_errors=True)
    return packaged, saved_model


def packaged_saved_model(packaged: str) -> str:
    """The SavedModel inside the MLflow Model folder `packaged` (MLflow copies the artifact
    under its own folder name), or "" where it holds none."""
    found = sorted(glob.glob(os.path.join(packaged, "artifacts", "*", "saved_model.pb")))
    return os.path.dirname(found[0]) if found else ""


def pick_name(registry, name: Optional[str]) -> str:
    """`name`, or the registry's only model."""
    names = sorted(registry.client.search_registered_models(), key=lambda m: m.name)
    names = [m.name for m in names]
    if name:
        if name not in names:
            raise ValueError(f"no registered model {name!r}; the registry has {names or 'none'}")
        return name
    if len(names) != 1:
        raise ValueError(
            f"the registry has {len(names)} models ({', '.join(names) or 'none'}); "
            "name one with --name"
            if names
            else "the registry has no model yet: run a pipeline first (tfx-transformers run ...)"
        )
    return names[0]


def registered(output: str, name: Optional[str], alias: str, version: Optional[str]) -> tuple:
    """(models:/ URI, version number, the server's registry variables) of `name`'s `version`,
    else its `alias`, in the registry the `registry` command reads."""
    registry = from_config(existing_mlflow_config(configs.output_paths(output, "")["registry_dir"]))
    name = pick_name(registry, name)
    found = registry.show(name, version) if version else registry.by_alias(name, alias)
    model_uri = f"models:/{name}/{version}" if version else f"models:/{name}@{alias}"
    env = {TRACKING_URI_ENV: registry.tracking_uri}
    if registry.artifact_root:
        env[serving_app.ARTIFACT_ROOT] = registry.artifact_root
    return model_uri, found["version"], env, found.get("saved_model", "")


def serving_runtime(saved_model: str, requested: str) -> str:
    """The runtime the export at `saved_model` answers through when `requested`; ValueError
    for one it lacks or that failed its check. `requested` itself where the export is out of
    reach (a registry whose artifacts are elsewhere): the server's worker decides."""
    from tensorflow.io import gfile

    if not saved_model or not gfile.exists(os.path.join(saved_model, "saved_model.pb")):
        return requested
    return runtimes.choose(runtimes.read_manifest(saved_model), requested)


# Its keyword arguments are the `serve` command's flags, one each (pipeline/cli.py).
def serving(
    output: str,
    name: Optional[str] = None,
    alias: str = "champion",
    version: Optional[str] = None,
    host: str = "127.0.0.1",
    port: int = 5000,
    workers: int = 1,
    max_request_bytes: int = contract.MAX_REQUEST_BYTES,
    max_rows: int = contract.MAX_ROWS,
    timeout_seconds: int = contract.REQUEST_TIMEOUT_SECONDS,
    threads_per_op: int = 0,
    folder: Optional[str] = None,
    runtime: str = runtimes.AUTO,
) -> Serving:
    """The server of `name`'s version `version`, else its `alias`, in the registry the
    `registry` command reads (MLFLOW_TRACKING_URI, else the local one), or of the model
    `folder` (packaged_folder; no registry read): uvicorn running pipeline/serving_app.py
    (MLflow's scoring app) with the request limits.

    threads_per_op: TensorFlow's intra-op threads in each worker (0: one per core). A request
    of one sentence or review runs many small ops that lose more to splitting across cores
    than they gain: 1 answers single requests sooner (docs/serving.md), with workers for the
    cores.

    runtime: what answers (runtimes.CHOICES); auto: the export's fastest validated one."""
    for limit, value in (
        ("max_request_bytes", max_request_bytes),
        ("max_rows", max_rows),
        ("timeout_seconds", timeout_seconds),
    ):
        if value <= 0:
            raise ValueError(f"{limit} must be positive, not {value}")
    if threads_per_op < 0:
        raise ValueError(f"threads_per_op must be 0 (one per core) or more, not {threads_per_op}")
    registry_env: Dict[str, str] = {}
    if folder:
        model_uri, served = packaged_folder(folder)
        served_version = os.path.basename(os.path.normpath(served))
        saved_model = (
            served
            if os.path.isfile(os.path.join(served, "saved_model.pb"))
            else packaged_saved_model(model_uri)
        )
    else:
        model_uri, served_version, registry_env, saved_model = registered(
            output, name, alias, version
        )
    answered_by = serving_runtime(saved_model, runtime)
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--factory",  # each worker calls create_app(): nothing is built on import
        "pipeline.serving_app:create_app",
    ]
    env = {
        **os.environ,
        **registry_env,
        "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
        serving_app.MODEL_URI: model_uri,
        serving_app.MAX_REQUEST_BYTES: str(max_request_bytes),
        contract.MAX_ROWS_VARIABLE: str(max_rows),
        serving_app.TIMEOUT: str(timeout_seconds),
        runtimes.RUNTIME_VARIABLE: runtime,
        **({"TF_NUM_INTRAOP_THREADS": str(threads_per_op)} if threads_per_op else {}),
        # The project's modules, wherever the server is started from.
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(configs.REPO_ROOT), os.environ.get("PYTHONPATH")])
        ),
    }
    limits = {
        "max_request_bytes": max_request_bytes,
        "max_rows": max_rows,
        "timeout_seconds": timeout_seconds,
    }
    url = f"http://{host}:{port}/invocations"
    return Serving(
        argv,
        env,
        model_uri,
        served_version,
        url,
        limits,
        registry_env.get(TRACKING_URI_ENV),
        answered_by,
    )
