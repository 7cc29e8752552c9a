"""Runs a preprocessing_fn through tf.Transform's Beam implementation, in memory."""
import os

import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam
from tensorflow_transform.tf_metadata import dataset_metadata, metadata_io, schema_utils

from trainer_module.preprocessing import text

RAW_FEATURE_SPEC = {
    "text": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def analyze_and_transform(rows, custom_config, output_dir, preprocessing_fn=text.preprocessing_fn):
    """Returns (transformed rows, TFTransformOutput) for `rows` of {'text', 'label'}."""
    metadata = dataset_metadata.DatasetMetadata(
        schema_utils.schema_from_feature_spec(RAW_FEATURE_SPEC))
    with tft_beam.Context(temp_dir=os.path.join(output_dir, "tmp")):
        (transformed, _), transform_fn = (rows, metadata) | tft_beam.AnalyzeAndTransformDataset(
            lambda inputs: preprocessing_fn(inputs, custom_config))
        _ = transform_fn | tft_beam.WriteTransformFn(output_dir)
    metadata_io.write_metadata(metadata, os.path.join(output_dir,
                                                      tft.TFTransformOutput.RAW_METADATA_DIR))
    return transformed, tft.TFTransformOutput(output_dir)
