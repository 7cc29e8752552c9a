"""Runs a preprocessing_fn over in-memory rows with tf.Transform's Beam implementation, and
writes the transform graph as the Transform component would (for tests and benchmarks)."""

import os
from typing import Callable, Iterable, Mapping, Tuple

import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, metadata_io, schema_utils

REVIEW_FEATURE_SPEC = {
    "text": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def analyze_and_transform(
    rows: Iterable[Mapping],
    preprocessing_fn: Callable,
    custom_config: Mapping,
    output_dir: str,
    feature_spec=REVIEW_FEATURE_SPEC,
) -> Tuple[list, tft.TFTransformOutput]:
    """Returns (transformed rows, TFTransformOutput over `output_dir`)."""
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(feature_spec))
    # Analysed, then transformed, as TFX's Transform executor does, with its deep copies of
    # each later analysis phase's input (use_deep_copy_optimization): a preprocessing_fn whose
    # analyzers need another's output fails there with this Beam version, and so here too.
    rows = list(rows)
    temp_dir = os.path.join(output_dir, "tmp")
    with tft_beam.Context(temp_dir=temp_dir, use_deep_copy_optimization=True):
        transform_fn = (rows, metadata) | tft_beam.AnalyzeDataset(
            lambda inputs: preprocessing_fn(inputs, custom_config)
        )
    with tft_beam.Context(temp_dir=temp_dir):
        transformed, _ = ((rows, metadata), transform_fn) | tft_beam.TransformDataset()
        _ = transform_fn | tft_beam.WriteTransformFn(output_dir)
    metadata_io.write_metadata(
        metadata, os.path.join(output_dir, tft.TFTransformOutput.RAW_METADATA_DIR)
    )
    return transformed, tft.TFTransformOutput(output_dir)
