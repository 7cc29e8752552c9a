"""The Evaluator's output read where a cloud pipeline root puts it: not on the local disk.
TensorFlow's in-memory `ram://` filesystem stands in for gs://; every reader goes through
TFX's fileio (or TFMA's own readers), never open() or os.path."""

import os
import pathlib

import tensorflow as tf

from components import evaluation_results as evaluation
from tests.report.fixtures import write_evaluation


def copy_to_ram(local: pathlib.Path, target: str) -> str:
    tf.io.gfile.makedirs(target)
    for name in os.listdir(local):
        tf.io.gfile.copy(str(local / name), f"{target}/{name}", overwrite=True)
    return target


def test_metrics_thresholds_and_failures_are_read_from_a_non_local_filesystem(tmp_path):
    write_evaluation(tmp_path / "evaluation", blessed=False)
    uri = copy_to_ram(tmp_path / "evaluation", "ram://pipeline_root/Evaluator/evaluation/16")
    assert not os.path.exists(uri)
    metrics = evaluation.overall_metrics(uri)
    assert (metrics["binary_accuracy"], metrics["example_count"]) == (0.75, 2.0)
    assert evaluation.metrics_by_slice(uri)["rating=9"] == {
        "binary_accuracy": {"candidate": 1.0},
        "mean_label": {"candidate": 1.0},
    }  # no AUC
    assert evaluation.thresholds(uri) == [
        {"metric": "BinaryAccuracy", "slices": "overall", "threshold": "value ≥ 0.9"}
    ]
    assert evaluation.blessing_failures(uri) == [
        "binary_accuracy value on overall: 0.7500 misses "
        "value_threshold { lower_bound { value: 0.9 } }"
    ]
