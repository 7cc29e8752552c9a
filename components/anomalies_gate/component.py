"""AnomaliesGate: fails the run, with a readable list, when ExampleValidator found anomalies.

ExampleValidator only records anomalies; nothing downstream reads them. The factory makes
Transform wait on this gate, so training never starts on data that broke the schema.
"""
import os

from tensorflow_metadata.proto.v0 import anomalies_pb2
from tfx.dsl.component.experimental.annotations import InputArtifact
from tfx.dsl.component.experimental.decorators import component
from tfx.dsl.io import fileio
from tfx.types import artifact_utils, standard_artifacts

ANOMALIES_FILE = "SchemaDiff.pb"  # what ExampleValidator writes in each Split-<name>/


class DataAnomaliesError(RuntimeError):
    """The examples do not match the schema."""


def describe_anomalies(anomalies_uri: str, split_names) -> list[str]:
    """One line per anomaly: split, feature and TFDV's description."""
    lines = []
    for split in split_names:
        path = os.path.join(anomalies_uri, f"Split-{split}", ANOMALIES_FILE)
        if not fileio.exists(path):
            continue
        with fileio.open(path, "rb") as f:
            anomalies = anomalies_pb2.Anomalies.FromString(f.read())
        for feature, info in sorted(anomalies.anomaly_info.items()):
            lines.append(f"split '{split}', feature '{feature}': {info.short_description} — "
                         f"{info.description}")
        if anomalies.HasField("dataset_anomaly_info"):
            info = anomalies.dataset_anomaly_info
            lines.append(f"split '{split}', dataset: {info.short_description} — {info.description}")
    return lines


@component
def AnomaliesGate(anomalies: InputArtifact[standard_artifacts.ExampleAnomalies]) -> None:
    """Raises DataAnomaliesError listing every anomaly; passes silently when there are none."""
    split_names = artifact_utils.decode_split_names(anomalies.split_names)
    lines = describe_anomalies(anomalies.uri, split_names)
    if lines:
        raise DataAnomaliesError(
            "ExampleValidator found anomalies; fix the data or update the schema, then rerun:\n  "
            + "\n  ".join(lines) + f"\n(anomalies: {anomalies.uri})")
