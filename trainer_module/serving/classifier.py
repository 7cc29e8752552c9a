"""Exports a classifier with the tf.Transform graph attached: one raw input feature (review text,
image bytes) in, class probabilities and names out.

Signatures:
  serving_default(examples: serialized tf.Example) -> probabilities, classes, label, label_name
                                                     [, score]: classes names every
                                                     probability's class, in label id order
  <raw_signature>(<raw feature>: string)          -> the same, from the raw value
  transform_features(examples)                    -> Transform's outputs (for TFMA)
  classify_transformed(<Transform's outputs>)     -> the same, from Transform's outputs: the
                                                     model alone (what onnx_export.py converts)
  transform_raw(<raw feature>: string)            -> Transform's outputs, the label's aside
                                                     (what runtimes.py runs before ONNX Runtime)
  attention(<raw feature>: string)                -> per-layer attention weights, when the
                                                     model family exports them (run report)
"""

from typing import Callable, Optional, Sequence

import keras
import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.serving.archive import strings_function, write_saved_model
from trainer_module.serving.runtimes import TRANSFORM_RAW


def export_classifier(
    model: keras.Model,
    tf_transform_output: tft.TFTransformOutput,
    export_dir: str,
    *,
    model_inputs: Callable[[dict], object],
    label_names: Sequence[str],
    raw_feature: str,
    raw_signature: str,
    attention: Optional[Callable[[dict], dict]] = None,
) -> None:
    """Writes the SavedModel; `model_inputs` maps Transform's outputs to the model's inputs and
    `attention` maps them to the `attention` signature's outputs."""
    tft_layer = tf_transform_output.transform_features_layer()
    raw_spec = tf_transform_output.raw_feature_spec()
    input_spec = {raw_feature: raw_spec[raw_feature]}
    input_shape = list(raw_spec[raw_feature].shape)  # [] or [1], as SchemaGen inferred
    names = tf.constant(list(label_names))

    def classify(transformed):
        logits = model(model_inputs(transformed), training=False)
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)  # (B, C)
        label = tf.argmax(probabilities, axis=-1)
        outputs = {
            "probabilities": probabilities,
            "classes": tf.broadcast_to(names, tf.shape(probabilities)),  # (B, C)
            "label": label,
            "label_name": tf.gather(names, label),
        }
        if len(label_names) == 2:
            outputs["score"] = probabilities[:, 1]  # P(class 1): what TFMA's binary metrics read
        return outputs

    @strings_function("examples")
    def serve_examples(serialized):
        return classify(tft_layer(tf.io.parse_example(serialized, input_spec)))

    @strings_function(raw_feature)
    def classify_raw(values):
        return classify(tft_layer({raw_feature: tf.reshape(values, [-1] + input_shape)}))

    @strings_function("examples")
    def transform_features(serialized):
        return tft_layer(tf.io.parse_example(serialized, raw_spec))

    @strings_function(raw_feature)
    def transform_raw(values):
        transformed = tft_layer({raw_feature: tf.reshape(values, [-1] + input_shape)})
        return {k: v for k, v in transformed.items() if k != features.LABEL}

    signatures = {
        "serving_default": serve_examples,
        raw_signature: classify_raw,
        "transform_features": transform_features,
        "classify_transformed": transformed_function(tf_transform_output, classify),
        TRANSFORM_RAW: transform_raw,
    }
    if attention is not None:

        @strings_function(raw_feature)
        def attention_raw(values):
            return attention(tft_layer({raw_feature: tf.reshape(values, [-1] + input_shape)}))

        signatures["attention"] = attention_raw
    write_saved_model(export_dir, model, tft_layer, signatures)


def transformed_function(tf_transform_output: tft.TFTransformOutput, classify: Callable):
    """`classify` as a signature over Transform's outputs (the label's aside), batched: the
    model without the tf.Transform graph."""
    spec = {
        name: tf.TensorSpec([None, *feature.shape], feature.dtype, name=name)
        for name, feature in tf_transform_output.transformed_feature_spec().items()
        if name != features.LABEL
    }

    @tf.function(input_signature=[spec])
    def classify_transformed(transformed):
        return classify(transformed)

    return classify_transformed
