"""`tfx-transformers serve`: a registered model version behind MLflow's own scoring server
(`mlflow models serve`, uvicorn), which answers `POST /invocations` with the pyfunc model of
components/model_registry/pyfunc_model.py."""
import dataclasses
import os
import sys
from typing import Dict, List, Optional

from components.model_registry.backends import TRACKING_URI_ENV, from_config, mlflow_config
from pipeline import configs


@dataclasses.dataclass(frozen=True)
class Serving:
    """What to start: MLflow's command line, its environment, and what it serves."""
    argv: List[str]
    env: Dict[str, str]
    model_uri: str
    version: str
    url: str

    def describe(self) -> dict:
        return {"model_uri": self.model_uri, "version": self.version, "url": self.url,
                "tracking_uri": self.env[TRACKING_URI_ENV]}


def pick_name(registry, name: Optional[str]) -> str:
    """`name`, or the registry's only model."""
    names = sorted(registry.client.search_registered_models(), key=lambda m: m.name)
    names = [m.name for m in names]
    if name:
        if name not in names:
            raise ValueError(f"no registered model {name!r}; the registry has {names or 'none'}")
        return name
    if len(names) != 1:
        raise ValueError(f"the registry has {len(names)} models ({', '.join(names) or 'none'}); "
                         "name one with --name" if names else
                         "the registry has no model yet: run a pipeline first "
                         "(tfx-transformers run ...)")
    return names[0]


def serving(output: str, name: Optional[str] = None, alias: str = "champion",
            version: Optional[str] = None, host: str = "127.0.0.1", port: int = 5000,
            workers: int = 1) -> Serving:
    """The `mlflow models serve` command for `name`'s version `version`, else its `alias`, in
    the registry the `registry` command reads (MLFLOW_TRACKING_URI, else the local one)."""
    registry = from_config(mlflow_config(configs.output_paths(output, "")["registry_dir"]))
    name = pick_name(registry, name)
    found = registry.show(name, version) if version else registry.by_alias(name, alias)
    model_uri = f"models:/{name}/{version}" if version else f"models:/{name}@{alias}"
    argv = [sys.executable, "-m", "mlflow", "models", "serve", "--model-uri", model_uri,
            "--env-manager", "local", "--host", host, "--port", str(port),
            "--workers", str(workers)]
    env = {**os.environ, TRACKING_URI_ENV: registry.tracking_uri,
           "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
           # MLflow starts `uvicorn` by name: the one beside this Python, also when the
           # environment is not activated.
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
    return Serving(argv, env, model_uri, found["version"], f"http://{host}:{port}/invocations")
