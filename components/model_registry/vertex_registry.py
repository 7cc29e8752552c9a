"""Vertex AI Model Registry backend: each pushed version is uploaded as a new version of one
model, served by the prebuilt TensorFlow container.

The model is `parent_model` when configured; otherwise the oldest model whose display name is
the pipeline's, created by the first upload (when two first pushes race, each creating a model,
the newer model's version moves into the oldest and the newer model is deleted). A SavedModel
already registered there (the same fingerprint, in a version label) is not uploaded again: a
rerun that re-blesses a cached model reports the existing version, and moves the alias to it
when blessed."""

import re
from typing import Dict, Optional, Tuple

from components.model_registry.version import (
    CHAMPION,
    SERVING_RUNTIME_TAG,
    ModelVersion,
    Registered,
)

NAME = "vertex"
# Vertex AI's prebuilt TensorFlow 2.16 serving container (CPU); use a GPU image for GPUs.
DEFAULT_SERVING_IMAGE = "us-docker.pkg.dev/vertex-ai/prediction/tf2-cpu.2-16:latest"


def label_value(value) -> str:
    """Vertex labels: at most 63 lower-case letters, digits, '_' and '-'."""
    return re.sub(r"[^a-z0-9_-]", "_", str(value).lower())[:63]


# Label values hold at most 63 characters: the first 32 hex digits (128 bits) of the sha256.
FINGERPRINT_LABEL = "saved_model_fingerprint"
FINGERPRINT_DIGITS = 32


def labels(version: ModelVersion) -> Dict[str, str]:
    values = {
        "pipeline": version.pipeline_name,
        "run_id": version.run_id,
        "blessed": str(version.blessed).lower(),
        "pushed_version": version.pushed_version,
    }
    if version.fingerprint:
        values[FINGERPRINT_LABEL] = version.fingerprint[:FINGERPRINT_DIGITS]
    if version.serving_runtime:
        values[SERVING_RUNTIME_TAG] = version.serving_runtime
    values.update(
        {
            f"metric_{name}": f"{value:.4f}"
            for name, value in version.metrics.items()
            if value is not None
        }
    )
    return {label_value(k): label_value(v) for k, v in values.items()}


class VertexRegistry:
    def __init__(
        self,
        project: str,
        region: str,
        parent_model: Optional[str] = None,
        serving_image: str = DEFAULT_SERVING_IMAGE,
        alias: str = CHAMPION,
    ):
        self.project, self.region, self.parent_model = project, region, parent_model
        self.serving_image, self.alias = serving_image, alias

    def register(self, version: ModelVersion) -> Registered:
        from google.cloud import aiplatform

        aiplatform.init(project=self.project, location=self.region)
        parent = self.parent_model or self.find_model(version.name)
        registered = self.upload(parent, version)
        created = registered.uri.rsplit("@", 1)[0]
        if parent is None:  # this push created a model: another push may have done so too
            oldest = self.find_model(version.name)
            if oldest != created:
                moved = self.upload(oldest, version)
                aiplatform.Model(model_name=created).delete()
                return moved
        return registered

    def upload(self, parent: Optional[str], version: ModelVersion) -> Registered:
        """A new version of `parent` (a new model when None), unless `parent` already holds
        this SavedModel."""
        from google.cloud import aiplatform

        if parent and version.fingerprint:
            existing = self.find_version(parent, version.fingerprint)
            if existing is not None:
                return self.reuse(parent, existing, version)
        model = aiplatform.Model.upload(
            display_name=version.name,
            artifact_uri=version.source,
            serving_container_image_uri=self.serving_image,
            parent_model=parent,
            # Only a blessed model becomes the default version and gets the alias.
            is_default_version=version.blessed,
            version_aliases=[self.alias] if version.blessed else None,
            version_description=f"pipeline {version.pipeline_name}, run {version.run_id}",
            labels=labels(version),
            sync=True,
        )
        return Registered(
            NAME,
            version.name,
            str(model.version_id),
            f"{model.resource_name}@{model.version_id}",
            self.alias if version.blessed else None,
        )

    def champion(self, name: str) -> Optional[Tuple[str, str]]:
        """(version, artifact URI) of the version holding the alias, or None when there is no
        such model or version yet (components/champion_model)."""
        from google.api_core import exceptions
        from google.cloud import aiplatform

        aiplatform.init(project=self.project, location=self.region)
        parent = self.parent_model or self.find_model(name)
        if parent is None:
            return None
        try:
            model = aiplatform.Model(model_name=f"{parent}@{self.alias}")
        except exceptions.NotFound:
            return None
        return str(model.version_id), str(model.uri)

    @staticmethod
    def find_model(display_name: str) -> Optional[str]:
        """The resource name of the oldest model named `display_name`, or None."""
        from google.cloud import aiplatform

        models = aiplatform.Model.list(
            filter=f'display_name="{display_name}"', order_by="create_time"
        )
        return models[0].resource_name if models else None

    @staticmethod
    def find_version(parent: str, fingerprint: str):
        """The version of `parent` labelled with this SavedModel fingerprint, or None."""
        from google.cloud import aiplatform

        value = label_value(fingerprint[:FINGERPRINT_DIGITS])
        versions = aiplatform.models.ModelRegistry(parent).list_versions(
            filter=f"labels.{FINGERPRINT_LABEL}={value}"
        )
        return versions[0] if versions else None

    def reuse(self, parent: str, existing, version: ModelVersion) -> Registered:
        """Reports the version already holding this SavedModel; a blessed rerun moves the
        alias to it."""
        from google.cloud import aiplatform

        aliased = version.blessed or self.alias in (existing.version_aliases or [])
        if version.blessed and self.alias not in (existing.version_aliases or []):
            aiplatform.models.ModelRegistry(parent).add_version_aliases(
                [self.alias], version=existing.version_id
            )
        return Registered(
            NAME,
            version.name,
            str(existing.version_id),
            f"{parent}@{existing.version_id}",
            self.alias if aliased else None,
        )
