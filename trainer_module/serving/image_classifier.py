"""Exports an image classifier: `classify_image(image)` takes encoded JPEG or PNG bytes of any
size (Transform's graph decodes, resizes and normalizes them), plus the classifier signatures
(trainer_module/serving/classifier.py)."""
from typing import Sequence

import keras
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.serving.classifier import export_classifier


def pixels(transformed: dict):
    """The ViT's input: Transform's normalized (B, S, S, 3) pixels."""
    return transformed[features.PIXELS]


def export_image_classifier(model: keras.Model, tf_transform_output: tft.TFTransformOutput,
                            export_dir: str, label_names: Sequence[str]) -> None:
    export_classifier(model, tf_transform_output, export_dir, model_inputs=pixels,
                      label_names=label_names, raw_feature=features.IMAGE,
                      raw_signature="classify_image")
