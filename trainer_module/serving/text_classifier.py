"""Exports a text classifier: `classify_text(text)` and the classifier signatures
(trainer_module/serving/classifier.py)."""
import keras
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.serving.classifier import export_classifier


def token_ids(transformed: dict):
    """The from-scratch encoder's input: Transform's padded token ids."""
    return transformed[features.TOKEN_IDS]


def export_text_classifier(model: keras.Model, tf_transform_output: tft.TFTransformOutput,
                           export_dir: str, model_inputs=token_ids,
                           label_names=features.LABEL_NAMES) -> None:
    export_classifier(model, tf_transform_output, export_dir, model_inputs=model_inputs,
                      label_names=label_names, raw_feature=features.TEXT,
                      raw_signature="classify_text")
