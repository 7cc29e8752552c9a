"""Writes a SavedModel from a Keras 3 model, the tf.Transform layer and plain tf.functions.

The families' serving functions are `tf.function(autograph=False)`: the models are written in
keras.ops (they trace under JAX too) and the serving code in TensorFlow ops, with no Python
control flow on tensors, so autograph's source conversion of every layer's call (most of an
export's time) buys nothing."""

import keras
import tensorflow as tf

# serving_default with each string output of one value per input made a column ([B] ->
# [B, 1]): what TFX's BulkInferrer calls. Its RunInference (tfx_bsl) splits outputs into rows
# and needs each row to be an array, which a string scalar of a [B] output is not.
BULK_INFERENCE = "bulk_inference"


def strings_function(input_name: str):
    """The decorator of a serving function taking one batch of strings, `input_name`."""
    return tf.function(
        autograph=False, input_signature=[tf.TensorSpec([None], tf.string, name=input_name)]
    )


def write_saved_model(
    export_dir: str, model: keras.Model, tft_layer, endpoints: dict, also_track=()
) -> None:
    """`endpoints`: signature name -> tf.function with an input_signature; a `serving_default`
    also gets its BULK_INFERENCE twin. The model and the transform layer are tracked so their
    variables and assets (vocabularies) are saved, and so is each of `also_track` (tf.Modules
    whose variables the endpoints read)."""
    archive = keras.export.ExportArchive()
    for resource in (model, tft_layer, *also_track):
        archive.track(resource)
    if "serving_default" in endpoints:
        endpoints = {**endpoints, BULK_INFERENCE: string_columns(endpoints["serving_default"])}
    for name, function in endpoints.items():
        archive.add_endpoint(name, function)
    archive.write_out(export_dir, verbose=False)


def string_columns(function):
    """`function` (a tf.function) with its rank-1 string outputs reshaped to [B, 1]."""

    @tf.function(autograph=False, input_signature=function.input_signature)
    def with_string_columns(*args):
        return {
            name: value[:, None] if value.dtype == tf.string and value.shape.rank == 1 else value
            for name, value in function(*args).items()
        }

    return with_string_columns
