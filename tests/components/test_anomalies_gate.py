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
    artifact = anomalies_artifact(tmp_path, {"train": anomalies_pb2.Anomalies(),
                                             "eval": anomalies_pb2.Anomalies()})
    AnomaliesGate.EXECUTOR_SPEC.executor_class().Do({"anomalies": [artifact]}, {}, {})


def test_anomalies_stop_the_run_with_a_readable_list(tmp_path):
    bad = anomalies_pb2.Anomalies()
    bad.anomaly_info["label"].short_description = "Unexpected string values"
    bad.anomaly_info["label"].description = "Examples contain values missing from the schema: maybe."
    artifact = anomalies_artifact(tmp_path, {"train": anomalies_pb2.Anomalies(), "eval": bad})
    assert describe_anomalies(artifact.uri, ["train", "eval"]) == [
        "split 'eval', feature 'label': Unexpected string values — "
        "Examples contain values missing from the schema: maybe."]
    with pytest.raises(DataAnomaliesError, match="feature 'label': Unexpected string values"):
        AnomaliesGate.EXECUTOR_SPEC.executor_class().Do({"anomalies": [artifact]}, {}, {})
