"""ArtifactRef: what the report needs of an artifact, from a TFX artifact or an MLMD record."""

import dataclasses
from typing import Any, Mapping, Optional

from ml_metadata.proto import metadata_store_pb2


@dataclasses.dataclass(frozen=True)
class ArtifactRef:
    role: str  # the report's input key: examples, statistics, model, ...
    type_name: str
    id: Optional[int]  # the MLMD artifact id
    uri: str
    properties: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def get(self, name: str, default=None):
        return self.properties.get(name, default)


def _value(value: metadata_store_pb2.Value):
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


def from_mlmd(role: str, artifact: metadata_store_pb2.Artifact, type_name: str) -> ArtifactRef:
    properties = {name: _value(v) for name, v in artifact.properties.items()}
    properties.update({name: _value(v) for name, v in artifact.custom_properties.items()})
    return ArtifactRef(role, type_name, artifact.id or None, artifact.uri, properties)


def from_tfx(role: str, artifact) -> ArtifactRef:
    """From a tfx.types.Artifact, as an executor receives it."""
    return from_mlmd(role, artifact.mlmd_artifact, artifact.type_name)
