"""The registry configuration (one JSON object, the component's `registry` parameter) and the
backend it names."""

import json
import os
from typing import Optional

from components.model_registry import mlflow_registry, vertex_registry
from components.model_registry.version import CHAMPION

TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"


def mlflow_config(
    registry_dir: str, tracking_uri: Optional[str] = None, alias: str = CHAMPION
) -> str:
    """MLflow: the server MLFLOW_TRACKING_URI names, else a SQLite store (and an artifact root)
    in `registry_dir`, nothing to start by hand. A SQLite store MLFLOW_TRACKING_URI names keeps
    its artifacts beside it too (MLflow's own default is `./mlruns` of whatever directory the
    registering process runs in); a server keeps its own."""
    tracking_uri = tracking_uri or os.environ.get(TRACKING_URI_ENV)
    if not tracking_uri:
        tracking_uri = mlflow_registry.local_tracking_uri(registry_dir)
        artifact_root = os.path.join(os.path.abspath(registry_dir), "artifacts")
    elif tracking_uri.startswith(mlflow_registry.SQLITE):
        store = tracking_uri[len(mlflow_registry.SQLITE) :]
        artifact_root = os.path.join(os.path.dirname(os.path.abspath(store)), "artifacts")
    else:
        artifact_root = None
    return json.dumps(
        {
            "backend": mlflow_registry.NAME,
            "alias": alias,
            "tracking_uri": tracking_uri,
            "artifact_root": artifact_root,
        }
    )


def existing_mlflow_config(registry_dir: str) -> str:
    """The registry that commands read (`registry`, `serve`): the server MLFLOW_TRACKING_URI
    names, else the local store in `registry_dir`, which a pipeline run made. Reading creates
    nothing: without that store, FileNotFoundError naming it."""
    if not os.environ.get(TRACKING_URI_ENV):
        store = mlflow_registry.local_store(registry_dir)
        if not os.path.exists(store):
            raise FileNotFoundError(
                f"no model registry in {registry_dir} ({store} does not exist): a pipeline run "
                f"with this --output registers its models there; {TRACKING_URI_ENV} names a "
                "tracking server instead"
            )
    return mlflow_config(registry_dir)


def vertex_config(
    project: str,
    region: str,
    parent_model: Optional[str] = None,
    serving_image: str = vertex_registry.DEFAULT_SERVING_IMAGE,
    alias: str = CHAMPION,
) -> str:
    return json.dumps(
        {
            "backend": vertex_registry.NAME,
            "project": project,
            "region": region,
            "parent_model": parent_model,
            "serving_image": serving_image,
            "alias": alias,
        }
    )


def from_config(config: str):
    options = json.loads(config)
    backend = options.pop("backend")
    if backend == mlflow_registry.NAME:
        return mlflow_registry.MlflowRegistry(**options)
    if backend == vertex_registry.NAME:
        return vertex_registry.VertexRegistry(**options)
    raise ValueError(f"unknown registry backend {backend!r}; known: mlflow, vertex")
