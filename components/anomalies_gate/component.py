"""AnomaliesGate: fails the run, with a readable list, when ExampleValidator found anomalies
(data that breaks the schema) or DistributionValidator found drift (data whose distribution
moved from the champion's data beyond a task's threshold).

The validators only record anomalies; nothing downstream reads them. The factory makes
Transform wait on this gate, so training never starts on such data.
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
    """One line per anomaly: split, feature and TFDV's description (DistributionValidator
    keeps only the reasons of its comparisons: their descriptions then)."""
    lines = []
    for split in split_names:
        folder = next(
            (
                os.path.join(anomalies_uri, f"{prefix}-{split}")
                for prefix in ("Split", "SplitPair")
                if fileio.exists(os.path.join(anomalies_uri, f"{prefix}-{split}", ANOMALIES_FILE))
            ),
            None,
        )
        if folder is None:
            continue
        with fileio.open(os.path.join(folder, ANOMALIES_FILE), "rb") as f:
            anomalies = anomalies_pb2.Anomalies.FromString(f.read())
        where = (
            f"split '{split}'"
            if "_" not in split
            else "split '{}' against '{}'".format(*split.split("_", 1))
        )
        infos = sorted(anomalies.anomaly_info.items())
        if anomalies.HasField("dataset_anomaly_info"):
            infos.append(("dataset", anomalies.dataset_anomaly_info))
        for feature, info in infos:
            subject = "dataset" if feature == "dataset" else f"feature '{feature}'"
            if info.short_description:
                lines.append(f"{where}, {subject}: {info.short_description} — {info.description}")
            else:
                lines += [
                    f"{where}, {subject}: {reason.short_description} — {reason.description}"
                    for reason in info.reason
                ]
    return lines


@component  # type: ignore[call-overload]  # TFX's annotations read as Any (pyproject.toml)
def AnomaliesGate(
    anomalies: InputArtifact[standard_artifacts.ExampleAnomalies],
    drift: InputArtifact[standard_artifacts.ExampleAnomalies] = None,
) -> None:
    """Raises DataAnomaliesError listing every anomaly; passes silently when there are none."""
    found = []
    for artifact, finder, remedy in (
        (anomalies, "ExampleValidator found anomalies", "fix the data or update the schema"),
        (
            drift,
            "DistributionValidator found drift from the champion's data",
            "data from another source is a pipeline of its own, which never meets this "
            "one's champion (--pipeline-name NAME, or --data DIR alone, named after DIR); "
            "the same source whose change is real: raise --drift-thresholds; otherwise fix "
            "the new data",
        ),
    ):
        if artifact is None:
            continue
        lines = describe_anomalies(
            artifact.uri, artifact_utils.decode_split_names(artifact.split_names)
        )
        if lines:
            found.append(
                f"{finder}; {remedy}, then rerun:\n  "
                + "\n  ".join(lines)
                + f"\n(anomalies: {artifact.uri})"
            )
    if found:
        raise DataAnomaliesError("\n".join(found))
