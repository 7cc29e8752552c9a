"""Exports a text classifier with the tf.Transform graph attached.

Signatures:
  serving_default(examples: serialized tf.Example) -> probabilities, score, label, label_name
  classify_text(text: string)                     -> the same, from raw review text
  transform_features(examples)                    -> Transform's outputs (for TFMA)
"""
import keras
import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.serving.archive import write_saved_model


def token_ids(transformed: dict):
    """The from-scratch encoder's input: Transform's padded token ids."""
    return transformed[features.TOKEN_IDS]


def export_text_classifier(model: keras.Model, tf_transform_output: tft.TFTransformOutput,
                           export_dir: str, model_inputs=token_ids,
                           label_names=features.LABEL_NAMES) -> None:
    """Writes the SavedModel; `model_inputs` maps Transform's outputs to the model's inputs."""
    tft_layer = tf_transform_output.transform_features_layer()
    raw_spec = tf_transform_output.raw_feature_spec()
    text_spec = {features.TEXT: raw_spec[features.TEXT]}
    text_shape = list(raw_spec[features.TEXT].shape)  # [] or [1], as SchemaGen inferred
    names = tf.constant(list(label_names))

    def classify(transformed):
        logits = model(model_inputs(transformed), training=False)
        probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)  # (B, C)
        label = tf.argmax(probabilities, axis=-1)
        outputs = {"probabilities": probabilities, "label": label,
                   "label_name": tf.gather(names, label)}
        if len(label_names) == 2:
            outputs["score"] = probabilities[:, 1]  # P(positive): what TFMA's binary metrics read
        return outputs

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve_examples(serialized):
        return classify(tft_layer(tf.io.parse_example(serialized, text_spec)))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def classify_text(text):
        return classify(tft_layer({features.TEXT: tf.reshape(text, [-1] + text_shape)}))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def transform_features(serialized):
        return tft_layer(tf.io.parse_example(serialized, raw_spec))

    write_saved_model(export_dir, model, tft_layer, {
        "serving_default": serve_examples, "classify_text": classify_text,
        "transform_features": transform_features})
