"""Exports the text encoder: `classify_text(text)`, `attention(text)` and the classifier
signatures (trainer_module/serving/classifier.py)."""

from typing import Sequence

import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.preprocessing.ngrams import NGRAM_IDS
from trainer_module.serving.classifier import export_classifier
from trainer_module.serving.contract import CLASSIFY_TEXT
from trainer_module.text_encoder.model import TextEncoderClassifier
from trainer_module.text_encoder.preprocessing import TOKEN_IDS, VOCABULARY_NAME

PAD_TOKEN, OOV_TOKEN, CLS_TOKEN = "[PAD]", "[UNK]", "[CLS]"


def model_inputs(transformed: dict):
    """The model's input from Transform's outputs: the padded token ids, and with the wide
    path the n-gram ids beside them."""
    if NGRAM_IDS not in transformed:
        return transformed[TOKEN_IDS]
    return {"token_ids": transformed[TOKEN_IDS], "ngram_ids": transformed[NGRAM_IDS]}


def id_tokens(tf_transform_output: tft.TFTransformOutput) -> list:
    """Token strings by id: padding (0), the vocabulary (shifted by one), then the OOV bucket."""
    words = [
        w.decode("utf-8", "replace")
        for w in tf_transform_output.vocabulary_by_name(VOCABULARY_NAME)
    ]
    return [PAD_TOKEN] + words + [OOV_TOKEN]


def encoder_attention(model: TextEncoderClassifier, tf_transform_output: tft.TFTransformOutput):
    """Transform's outputs -> tokens (B, T'), token_mask (B, T') and the encoder's attention
    weights (B, layers, heads, T', T'); T' counts the [CLS] position when the model pools it."""
    words = tf.constant(id_tokens(tf_transform_output))

    def attention(transformed):
        ids = transformed[TOKEN_IDS]
        _, mask, weights = model.encode(ids, training=False)
        tokens = tf.gather(words, ids)
        if model.config.pooling == "cls":
            tokens = tf.concat([tf.fill([tf.shape(ids)[0], 1], CLS_TOKEN), tokens], axis=1)
        return {
            "tokens": tokens,
            "token_mask": mask,
            "attention": tf.cast(tf.stack(weights, axis=1), tf.float32),
        }

    return attention


def export(
    model: TextEncoderClassifier,
    tf_transform_output: tft.TFTransformOutput,
    export_dir: str,
    label_names: Sequence[str] = features.LABEL_NAMES,
) -> None:
    """The SavedModel answering with `label_names` (by label), with the attention signature."""
    export_classifier(
        model,
        tf_transform_output,
        export_dir,
        model_inputs=model_inputs,
        label_names=label_names,
        raw_feature=features.TEXT,
        raw_signature=CLASSIFY_TEXT,
        attention=encoder_attention(model, tf_transform_output),
    )
