"""Exports the fine-tuned BERT classifier: `classify_text(text)` and the classifier signatures
(trainer_module/serving/classifier.py). Its tokenizer runs tensorflow-text ops, so a client
imports tensorflow_text (or trainer_module.serving.custom_ops) before loading it."""

from typing import Sequence

import keras
import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.bert.preprocessing import PADDING_MASK, SEGMENT_IDS, TOKEN_IDS
from trainer_module.preprocessing.ngrams import NGRAM_IDS
from trainer_module.serving.classifier import export_classifier
from trainer_module.serving.contract import CLASSIFY_TEXT

SEQUENCES = ("token_ids", "segment_ids", "padding_mask")  # the inputs that trim_padding cuts


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


def trim_padding(inputs: dict, multiple: int) -> dict:
    """The model's inputs with the padding past their longest sequence cut off, rounded up to a
    multiple of `multiple` pieces (few distinct shapes: one compiled step each); the n-gram ids
    unchanged. Packed sequences end in padding and every layer masks it, so the logits are
    the same at a fraction of the work for short reviews. 0: unchanged."""
    if not multiple:
        return inputs
    full = tf.shape(inputs["token_ids"])[1]
    longest = tf.reduce_max(tf.reduce_sum(inputs["padding_mask"], axis=1))
    # Rounded up with non-negative operands only: tf2onnx converts an integer FloorDiv to
    # ONNX's Div, which truncates, so -(-n // m) would round down (to 0 for a short batch).
    length = tf.minimum(full, (longest + multiple - 1) // multiple * multiple)
    return {key: value[:, :length] if key in SEQUENCES else value for key, value in inputs.items()}


def export(
    model: keras.Model,
    tf_transform_output: tft.TFTransformOutput,
    export_dir: str,
    length_multiple: int = 0,
    label_names: Sequence[str] = features.LABEL_NAMES,
) -> None:
    """The SavedModel answering with `label_names` (by label), each request's padding trimmed
    (trim_padding) to `length_multiple`."""
    export_classifier(
        model,
        tf_transform_output,
        export_dir,
        model_inputs=lambda transformed: trim_padding(bert_inputs(transformed), length_multiple),
        label_names=label_names,
        raw_feature=features.TEXT,
        raw_signature=CLASSIFY_TEXT,
    )
