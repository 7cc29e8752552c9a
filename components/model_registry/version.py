"""What the registry records about one pushed model version."""
import dataclasses
from typing import Dict, Optional

CHAMPION = "champion"  # the alias moved to each newly blessed version


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

    def tags(self) -> Dict[str, str]:
        """Flat string tags: pipeline, run, blessing, pushed version and MLMD ids."""
        tags = {"pipeline_name": self.pipeline_name, "pipeline_run_id": self.run_id,
                "blessed": str(self.blessed).lower(), "pushed_version": self.pushed_version}
        tags.update({f"mlmd_{role}_id": str(i) for role, i in sorted(self.lineage.items())})
        return tags


@dataclasses.dataclass(frozen=True)
class Registered:
    """Where a version landed: the registry, the model name, its version and alias."""
    registry: str
    name: str
    version: str
    uri: str  # the registry's address of the version
    alias: Optional[str] = None
