import pytest
from tensorflow_metadata.proto.v0 import anomalies_pb2
from tfx.types import artifact_utils, standard_artifacts

from components.anomalies_gate import AnomaliesGate, describe_anomalies
from components.anomalies_gate.component import DataAnomaliesError


def anomalies_artifact(tmp_path, per_split):
    artifact = standard_artifacts.ExampleAnomalies()
    artifact.uri = str(tmp_path)
    artifact.split_names = artifact_utils.encode_split_names(list(per_split))
    for split, anomalies in per_split.items():
        (tmp_path / f"Split-{split}").mkdir()
        (tmp_path / f"Split-{split}" / "SchemaDiff.pb").write_bytes(anomalies.SerializeToString())
    return artifact


def test_no_anomalies_passes(tmp_path):
    artifact = anomalies_artifact(
        tmp_path, {"train": anomalies_pb2.Anomalies(), "eval": anomalies_pb2.Anomalies()}
    )
    AnomaliesGate.EXECUTOR_SPEC.executor_class().Do({"anomalies": [artifact]}, {}, {})


def test_anomalies_stop_the_run_with_a_readable_list(tmp_path):
    bad = anomalies_pb2.Anomalies()
    bad.anomaly_info["label"].short_description = "Unexpected string values"
    bad.anomaly_info[
        "label"
    ].description = "Examples contain values missing from the schema: maybe."
    artifact = anomalies_artifact(tmp_path, {"train": anomalies_pb2.Anomalies(), "eval": bad})
    assert describe_anomalies(artifact.uri, ["train", "eval"]) == [
        "split 'eval', feature 'label': Unexpected string values — "
        "Examples contain values missing from the schema: maybe."
    ]
    with pytest.raises(DataAnomaliesError, match="feature 'label': Unexpected string values"):
        AnomaliesGate.EXECUTOR_SPEC.executor_class().Do({"anomalies": [artifact]}, {}, {})


def test_drift_found_by_distribution_validator_names_feature_measure_and_threshold(tmp_path):
    """DistributionValidator writes SplitPair-<test>_<baseline>/ folders and keeps only the
    reasons of its comparisons."""
    drift = anomalies_pb2.Anomalies()
    reason = drift.anomaly_info["label"].reason.add()
    reason.short_description = (
        "High approximate Jensen-Shannon divergence between current and previous"
    )
    reason.description = (
        "The approximate Jensen-Shannon divergence between current and previous "
        "is 0.31 (up to six significant digits), above the threshold 0.1."
    )
    (tmp_path / "drift" / "SplitPair-train_train").mkdir(parents=True)
    (tmp_path / "drift" / "SplitPair-train_train" / "SchemaDiff.pb").write_bytes(
        drift.SerializeToString()
    )
    drift_artifact = standard_artifacts.ExampleAnomalies()
    drift_artifact.uri = str(tmp_path / "drift")
    drift_artifact.split_names = artifact_utils.encode_split_names(["train_train"])
    (tmp_path / "schema").mkdir()
    schema = anomalies_artifact(tmp_path / "schema", {"train": anomalies_pb2.Anomalies()})
    with pytest.raises(DataAnomaliesError) as raised:
        AnomaliesGate.EXECUTOR_SPEC.executor_class().Do(
            {"anomalies": [schema], "drift": [drift_artifact]}, {}, {}
        )
    message = str(raised.value)
    assert message.startswith("DistributionValidator found drift from the champion's data")
    assert (
        "split 'train' against 'train', feature 'label': High approximate Jensen-Shannon "
        "divergence between current and previous — The approximate Jensen-Shannon "
        "divergence between current and previous is 0.31"
    ) in message
    assert "above the threshold 0.1" in message and "--drift-thresholds" in message
    # Both ways out, and which one fits a new source.
    assert "data from another source is a pipeline of its own" in message
    assert "--pipeline-name NAME" in message
    assert "ExampleValidator" not in message  # the schema check found nothing
