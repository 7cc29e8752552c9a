"""What the registry records about one pushed model version."""

import dataclasses
from typing import Dict, Optional

CHAMPION = "champion"  # the alias moved to each newly blessed version
FINGERPRINT_TAG = "saved_model_fingerprint"
SERVING_RUNTIME_TAG = "serving_runtime"


@dataclasses.dataclass(frozen=True)
class ModelVersion:
    name: str  # the registered model: the pipeline's name, e.g. imdb-text-encoder
    source: str  # the complete pushed SavedModel (a version folder, never a partial copy)
    blessed: bool
    metrics: Dict[str, float]  # TFMA, overall
    pipeline_name: str
    run_id: str
    pushed_version: str
    lineage: Dict[str, int]  # MLMD artifact ids: examples, transform_graph, model, ...
    # sha256 of the SavedModel's fingerprint.pb: the same model wherever it was pushed to.
    fingerprint: str = ""
    # What serves it by default (trainer_module/serving/runtimes.py): "savedmodel",
    # "onnxruntime" or "onnxruntime-int8"; "" where not known.
    serving_runtime: str = ""

    def tags(self) -> Dict[str, str]:
        """Flat string tags: pipeline, run, blessing, pushed version and MLMD ids."""
        tags = {
            "pipeline_name": self.pipeline_name,
            "pipeline_run_id": self.run_id,
            "blessed": str(self.blessed).lower(),
            "pushed_version": self.pushed_version,
        }
        tags.update({f"mlmd_{role}_id": str(i) for role, i in sorted(self.lineage.items())})
        if self.fingerprint:
            tags[FINGERPRINT_TAG] = self.fingerprint
        if self.serving_runtime:
            tags[SERVING_RUNTIME_TAG] = self.serving_runtime
        return tags


def serving_runtime(model_dir: str) -> str:
    """The runtime `model_dir` answers through by default (its runtimes.json's choice)."""
    from trainer_module.serving import runtimes

    return runtimes.choose(runtimes.read_manifest(model_dir))


def saved_model_fingerprint(model_dir: str) -> str:
    """sha256 of `model_dir`/fingerprint.pb (TensorFlow's checksums of the whole SavedModel),
    or "" when the SavedModel has none."""
    import hashlib
    import os

    from tfx.dsl.io import fileio

    path = os.path.join(model_dir, "fingerprint.pb")
    if not fileio.exists(path):
        return ""
    with fileio.open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@dataclasses.dataclass(frozen=True)
class Registered:
    """Where a version landed: the registry, the model name, its version and alias."""

    registry: str
    name: str
    version: str
    uri: str  # the registry's address of the version
    alias: Optional[str] = None
