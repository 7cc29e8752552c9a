"""Exports the fine-tuned BERT classifier: `classify_text(text)` and the classifier signatures
(trainer_module/serving/classifier.py). Its tokenizer runs tensorflow-text ops, so a client
imports tensorflow_text (or trainer_module.serving.custom_ops) before loading it."""

import keras
import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.bert.preprocessing import PADDING_MASK, SEGMENT_IDS, TOKEN_IDS
from trainer_module.preprocessing.ngrams import NGRAM_IDS
from trainer_module.serving.classifier import export_classifier
from trainer_module.serving.contract import CLASSIFY_TEXT


def bert_inputs(transformed: dict) -> dict:
    """Transform's outputs -> the model's inputs (model.BertClassifier)."""
    inputs = {
        "token_ids": tf.cast(transformed[TOKEN_IDS], tf.int32),
        "segment_ids": tf.cast(transformed[SEGMENT_IDS], tf.int32),
        "padding_mask": tf.cast(transformed[PADDING_MASK], tf.int32),
    }
    if NGRAM_IDS in transformed:
        inputs["ngram_ids"] = tf.cast(transformed[NGRAM_IDS], tf.int32)
    return inputs


def export(model: keras.Model, tf_transform_output: tft.TFTransformOutput, export_dir: str) -> None:
    export_classifier(
        model,
        tf_transform_output,
        export_dir,
        model_inputs=bert_inputs,
        label_names=features.LABEL_NAMES,
        raw_feature=features.TEXT,
        raw_signature=CLASSIFY_TEXT,
    )
