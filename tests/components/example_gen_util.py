"""Runs an ExampleGen component's executor directly and reads back what it wrote."""
import glob
import os

import tensorflow as tf
from google.protobuf import message
from tfx.types import standard_artifacts
from tfx.utils import proto_utils


def run_executor(component, output_dir, examples=None) -> dict:
    """Calls the component's executor Do(); returns split name -> list of tf.train.Example.

    `examples`: the output Examples artifact to use (to read its properties afterwards).
    """
    exec_properties = {
        key: proto_utils.proto_to_json(value) if isinstance(value, message.Message) else value
        for key, value in component.exec_properties.items()
    }
    examples = examples or standard_artifacts.Examples()
    examples.uri = str(output_dir)
    component.executor_spec.executor_class().Do({}, {"examples": [examples]}, exec_properties)
    splits = {}
    for split_dir in sorted(glob.glob(os.path.join(str(output_dir), "Split-*"))):
        files = sorted(glob.glob(os.path.join(split_dir, "*.gz")))
        records = tf.data.TFRecordDataset(files, compression_type="GZIP")
        splits[os.path.basename(split_dir)[len("Split-"):]] = [
            tf.train.Example.FromString(r.numpy()) for r in records]
    return splits


def value(example: tf.train.Example, name: str):
    feature = example.features.feature[name]
    if feature.HasField("int64_list"):
        return feature.int64_list.value[0]
    return feature.bytes_list.value[0].decode("utf-8")
