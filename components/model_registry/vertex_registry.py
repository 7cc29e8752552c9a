"""Vertex AI Model Registry backend: each pushed version is uploaded as a new version of an
existing model (`parent_model`), served by the prebuilt TensorFlow container."""
import re
from typing import Dict, Optional

from components.model_registry.version import CHAMPION, ModelVersion, Registered

NAME = "vertex"
# Vertex AI's prebuilt TensorFlow 2.16 serving container (CPU); use a GPU image for GPUs.
DEFAULT_SERVING_IMAGE = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-16:latest"


def label_value(value) -> str:
    """Vertex labels: at most 63 lower-case letters, digits, '_' and '-'."""
    return re.sub(r"[^a-z0-9_-]", "_", str(value).lower())[:63]


def labels(version: ModelVersion) -> Dict[str, str]:
    values = {"pipeline": version.pipeline_name, "run_id": version.run_id,
              "blessed": str(version.blessed).lower(), "pushed_version": version.pushed_version}
    values.update({f"metric_{name}": f"{value:.4f}" for name, value in version.metrics.items()
                   if value is not None})
    return {label_value(k): label_value(v) for k, v in values.items()}


class VertexRegistry:
    def __init__(self, project: str, region: str, parent_model: Optional[str] = None,
                 serving_image: str = DEFAULT_SERVING_IMAGE, alias: str = CHAMPION):
        self.project, self.region, self.parent_model = project, region, parent_model
        self.serving_image, self.alias = serving_image, alias

    def register(self, version: ModelVersion) -> Registered:
        from google.cloud import aiplatform

        aiplatform.init(project=self.project, location=self.region)
        model = aiplatform.Model.upload(
            display_name=version.name,
            artifact_uri=version.source,
            serving_container_image_uri=self.serving_image,
            parent_model=self.parent_model,
            # Only a blessed model becomes the default version and gets the alias.
            is_default_version=version.blessed,
            version_aliases=[self.alias] if version.blessed else None,
            version_description=f"pipeline {version.pipeline_name}, run {version.run_id}",
            labels=labels(version),
            sync=True,
        )
        return Registered(NAME, version.name, str(model.version_id),
                          f"{model.resource_name}@{model.version_id}",
                          self.alias if version.blessed else None)
