"""Exports the ViT: `classify_image(image)` takes encoded JPEG or PNG bytes of any size
(Transform's graph decodes, resizes and normalizes them), `attention(image)` returns the
attention weights, plus the classifier signatures (trainer_module/serving/classifier.py)."""

import math
from typing import Sequence

import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.serving.classifier import export_classifier
from trainer_module.serving.contract import CLASSIFY_IMAGE
from trainer_module.vit.model import VitClassifier
from trainer_module.vit.preprocessing import PIXELS


def pixels(transformed: dict):
    """The model's input: Transform's normalized (B, S, S, 3) pixels."""
    return transformed[PIXELS]


def vit_attention(model: VitClassifier):
    """Transform's outputs -> attention (B, layers, heads, T, T) and patch_grid (B,): the side
    of the row-major patch grid; T = grid² + 1 when position 0 is the [CLS] token."""
    grid = math.isqrt(model.config.num_patches)

    def attention(transformed):
        _, weights = model.encode(pixels(transformed), training=False)
        stacked = tf.cast(tf.stack(weights, axis=1), tf.float32)
        return {"attention": stacked, "patch_grid": tf.fill([tf.shape(stacked)[0]], grid)}

    return attention


def export(
    model: VitClassifier,
    tf_transform_output: tft.TFTransformOutput,
    export_dir: str,
    label_names: Sequence[str],
) -> None:
    export_classifier(
        model,
        tf_transform_output,
        export_dir,
        model_inputs=pixels,
        label_names=label_names,
        raw_feature=features.IMAGE,
        raw_signature=CLASSIFY_IMAGE,
        attention=vit_attention(model),
    )
