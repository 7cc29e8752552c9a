"""Small hand-made artifacts of one run, as the RunReport executor receives them."""

import json
import os
import shutil

import tensorflow as tf
from tensorflow_metadata.proto.v0 import anomalies_pb2, statistics_pb2
from tensorflow_model_analysis.proto import metrics_for_slice_pb2, validation_result_pb2
from tfx.types import standard_artifacts

EVAL_TEXTS = ["great fun, great cast", "dull and awful"]
SPLITS = json.dumps(["train", "eval"])


def _artifact(artifact_class, uri, artifact_id, **properties):
    artifact = artifact_class()
    artifact.uri = str(uri)
    artifact.id = artifact_id
    for name, value in properties.items():
        if isinstance(value, int):
            artifact.set_int_custom_property(name, value)
        else:
            artifact.set_string_custom_property(name, value)
    return artifact


def _example(text: str, label: int) -> bytes:
    return tf.train.Example(
        features=tf.train.Features(
            feature={
                "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
            }
        )
    ).SerializeToString()


def write_examples(root):
    os.makedirs(root / "Split-eval")
    with tf.io.TFRecordWriter(
        str(root / "Split-eval" / "data_tfrecord-00000-of-00001.gz"), options="GZIP"
    ) as writer:
        for index, text in enumerate(EVAL_TEXTS):
            writer.write(_example(text, 1 - index))
    examples = _artifact(
        standard_artifacts.Examples, root, 1, data_source="/data/shop-reviews", data_layout="csv"
    )
    examples.split_names = SPLITS
    return examples


def write_statistics(root):
    for split, count in (("train", 4), ("eval", 2)):
        stats = statistics_pb2.DatasetFeatureStatisticsList()
        dataset = stats.datasets.add(num_examples=count)
        text = dataset.features.add(type=statistics_pb2.FeatureNameStatistics.STRING)
        text.path.step.append("text")
        text.string_stats.common_stats.num_non_missing = count
        text.string_stats.unique = count
        text.string_stats.avg_length = 12.5
        label = dataset.features.add(type=statistics_pb2.FeatureNameStatistics.INT)
        label.path.step.append("label")
        label.num_stats.common_stats.num_non_missing = count - 1  # one missing label
        label.num_stats.mean, label.num_stats.max = 0.5, 1
        os.makedirs(root / f"Split-{split}")
        (root / f"Split-{split}" / "FeatureStats.pb").write_bytes(stats.SerializeToString())
    statistics = _artifact(standard_artifacts.ExampleStatistics, root, 2)
    statistics.split_names = SPLITS
    return statistics


def write_anomalies(root, found: bool):
    os.makedirs(root / "Split-eval")
    anomalies = anomalies_pb2.Anomalies()
    if found:
        info = anomalies.anomaly_info["label"]
        info.short_description = "Column dropped"
        info.description = "The feature was present in fewer examples than expected."
    (root / "Split-eval" / "SchemaDiff.pb").write_bytes(anomalies.SerializeToString())
    artifact = _artifact(standard_artifacts.ExampleAnomalies, root, 4)
    artifact.split_names = json.dumps(["eval"])
    return artifact


def write_drift(root, compared: bool):
    """DistributionValidator's output: a train_train split pair within the thresholds, or
    (`compared` False) nothing, as when there was no champion to compare with."""
    os.makedirs(root)
    if compared:
        os.makedirs(root / "SplitPair-train_train")
        (root / "SplitPair-train_train" / "SchemaDiff.pb").write_bytes(
            anomalies_pb2.Anomalies().SerializeToString()
        )
    artifact = _artifact(standard_artifacts.ExampleAnomalies, root, 5)
    artifact.split_names = json.dumps(["train_train"] if compared else [])
    return artifact


def write_model(root, export_dir: str):
    """A text classifier's export (2 layers, 2 heads) where the Trainer puts it (Format-Serving)."""
    shutil.copytree(export_dir, root / "model" / "Format-Serving")
    return _artifact(standard_artifacts.Model, root / "model", 13)


def write_model_run(root):
    for split, tags in (
        ("train", {"epoch_loss": [0.9, 0.4], "epoch_accuracy": [0.6, 0.8]}),
        (
            "validation",
            {
                "epoch_loss": [0.8, 0.5],
                "epoch_accuracy": [0.55, 0.75],
                "evaluation_loss_vs_iterations": [0.8, 0.5],
            },
        ),
    ):
        writer = tf.summary.create_file_writer(str(root / split))
        with writer.as_default():
            for tag, values in tags.items():
                for step, value in enumerate(values):
                    at = (step + 1) * 10 if tag.endswith("iterations") else step
                    tf.summary.scalar(tag, value, step=at)
        writer.close()
    # A preset's warmup of a quarter of the steps, 4 of the 16 that ran (text_encoder/model.py).
    history = {
        "config": {"d_model": 8, "num_layers": 2, "warmup_fraction": 0.25},
        "learning_rate": {
            "schedule": "WarmupInverseSqrt",
            "peak_learning_rate": 0.003,
            "warmup_steps": 4,
        },
    }
    (root / "history.json").write_text(json.dumps(history))
    return _artifact(standard_artifacts.ModelRun, root, 14)


def _metric(metrics, name, value, model_name="candidate", is_diff=False):
    entry = metrics.metric_keys_and_values.add()
    entry.key.name, entry.key.model_name, entry.key.is_diff = name, model_name, is_diff
    entry.value.double_value.value = value


def write_evaluation(root, blessed: bool):
    os.makedirs(root)
    overall = metrics_for_slice_pb2.MetricsForSlice()
    overall.slice_key.SetInParent()
    _metric(overall, "binary_accuracy", 0.75)
    _metric(overall, "binary_accuracy", 0.70, model_name="baseline")
    _metric(overall, "binary_accuracy", 0.05, is_diff=True)
    _metric(overall, "example_count", 2.0)
    by_length = metrics_for_slice_pb2.MetricsForSlice()
    key = by_length.slice_key.single_slice_keys.add(column="length_bucket")
    key.bytes_value = b"0-99"
    _metric(by_length, "binary_accuracy", 0.5)
    _metric(by_length, "auc", 0.625)
    _metric(by_length, "mean_label", 0.5)
    # A slice of positive reviews only, as TFMA reports it: AUC 0.0, which is undefined there.
    by_rating = metrics_for_slice_pb2.MetricsForSlice()
    by_rating.slice_key.single_slice_keys.add(column="rating", int64_value=9)
    _metric(by_rating, "binary_accuracy", 1.0)
    _metric(by_rating, "auc", 0.0)
    _metric(by_rating, "mean_label", 1.0)
    with tf.io.TFRecordWriter(str(root / "metrics-00000-of-00001.tfrecord")) as writer:
        for metrics in (overall, by_length, by_rating):
            writer.write(metrics.SerializeToString())
    result = validation_result_pb2.ValidationResult(validation_ok=blessed)
    if not blessed:
        failure = result.metric_validations_per_slice.add().failures.add()
        failure.metric_key.name = "binary_accuracy"
        failure.metric_value.double_value.value = 0.75
        failure.metric_threshold.value_threshold.lower_bound.value = 0.9
    with tf.io.TFRecordWriter(str(root / "validations.tfrecord")) as writer:
        writer.write(result.SerializeToString())
    config = {
        "evalConfig": {
            "metricsSpecs": [
                {
                    "metrics": [
                        {
                            "className": "BinaryAccuracy",
                            "perSliceThresholds": [
                                {
                                    "slicingSpecs": [{}],
                                    "threshold": {
                                        "valueThreshold": {
                                            "lowerBound": 0.9 if not blessed else 0.6
                                        }
                                    },
                                }
                            ],
                        }
                    ]
                }
            ]
        }
    }
    (root / "eval_config.json").write_text(json.dumps(config))
    return _artifact(standard_artifacts.ModelEvaluation, root, 16)


def run_inputs(
    root, export_dir: str, *, blessed: bool = True, anomalies: bool = False, drift=None
) -> dict:
    """The executor's input_dict for a run whose model (a copy of `export_dir`) was (or was
    not) blessed and pushed; `drift`: with a drift check that compared (True) or had no
    baseline (False)."""
    model = write_model(root, export_dir)
    pushed = (
        {
            "pushed": 1,
            "pushed_destination": "/serving/imdb/1795000000",
            "pushed_version": "1795000000",
        }
        if blessed
        else {"pushed": 0}
    )
    inputs = {
        "examples": write_examples(root / "examples"),
        "statistics": write_statistics(root / "statistics"),
        "anomalies": write_anomalies(root / "anomalies", anomalies),
        "model": model,
        "model_run": write_model_run(root / "model_run"),
        "evaluation": write_evaluation(root / "evaluation", blessed),
        "blessing": _artifact(
            standard_artifacts.ModelBlessing, root / "blessing", 15, blessed=int(blessed)
        ),
        "pushed_model": _artifact(standard_artifacts.PushedModel, root / "pushed", 17, **pushed),
        "baseline_model": _artifact(standard_artifacts.Model, root / "baseline", 9),
    }
    if drift is not None:
        inputs["drift"] = write_drift(root / "drift", drift)
    return {key: [artifact] for key, artifact in inputs.items()}
