"""Runs an ExampleGen component's executor directly and reads back what it wrote."""

import glob
import os

import tensorflow as tf
from tfx.dsl.components.base.base_beam_executor import BaseBeamExecutor
from tfx.types import standard_artifacts

from components.dataset_example_gen import as_exec_properties
from pipeline import configs


def run_executor(component, output_dir, examples=None, exec_properties=None) -> dict:
    """Calls the component's executor Do(); returns split name -> list of tf.train.Example.

    `examples`: the output Examples artifact to use (to read its properties afterwards);
    `exec_properties`: what the executor gets (default: the component's).
    """
    exec_properties = exec_properties or as_exec_properties(component)
    examples = examples or standard_artifacts.Examples()
    examples.uri = str(output_dir)
    executor = component.executor_spec.executor_class(
        BaseBeamExecutor.Context(beam_pipeline_args=configs.BEAM_MODES["in_memory"])
    )  # the local runs' Beam (pipeline/local_beam.py)
    executor.Do({}, {"examples": [examples]}, exec_properties)
    splits = {}
    for split_dir in sorted(glob.glob(os.path.join(str(output_dir), "Split-*"))):
        files = sorted(glob.glob(os.path.join(split_dir, "*.gz")))
        records = tf.data.TFRecordDataset(files, compression_type="GZIP")
        splits[os.path.basename(split_dir)[len("Split-") :]] = [
            tf.train.Example.FromString(r.numpy()) for r in records
        ]
    return splits


def resolve_layout(component) -> dict:
    """The exec properties the component's executor works from once it found the layout."""
    return component.executor_spec.executor_class().resolve_layout(as_exec_properties(component))


def value(example: tf.train.Example, name: str):
    feature = example.features.feature[name]
    if feature.HasField("int64_list"):
        return feature.int64_list.value[0]
    return feature.bytes_list.value[0].decode("utf-8")


def beam_graph_size(component) -> int:
    """Bytes of the Beam pipeline the component's executor builds (its runner API proto), as a
    runner would receive it: what grows with the data here is shipped to every job."""
    import apache_beam as beam

    executor = component.executor_spec.executor_class()
    pipeline = beam.Pipeline()
    resolved = executor.resolve_layout(as_exec_properties(component))
    executor.GenerateExamplesByBeam(pipeline, resolved)
    return len(pipeline.to_runner_api().SerializeToString())


# Pickled closures vary by a few dozen bytes from one build to the next; one file name or one
# image in the graph adds more than this.
GRAPH_NOISE_BYTES = 256


def assert_graph_does_not_grow(make_component, small_dir, large_dir) -> None:
    """The Beam graph for `large_dir` (4x the data of `small_dir`) is the same size, within
    pickling noise, while the data grew by more than that many times over."""

    def data_bytes(root):
        return sum(
            os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(root) for f in files
        )

    grown = data_bytes(large_dir) - data_bytes(small_dir)
    assert grown > 4 * GRAPH_NOISE_BYTES
    small, large = (beam_graph_size(make_component(str(d))) for d in (small_dir, large_dir))
    assert abs(large - small) < GRAPH_NOISE_BYTES, (small, large, grown)
