"""tf.Transform preprocessing for text classification: normalise, tokenise, vocabulary, pad.

The same graph runs in the Transform component (over the whole training split, where the
vocabulary analyzer sees every review) and inside the served model.
"""
from typing import Any, Mapping

import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features

VOCABULARY_NAME = "text_vocabulary"
NUM_OOV_BUCKETS = 1  # every out-of-vocabulary word shares one id
# Review length (in tokens, before truncation) at which each TFMA slice bucket starts.
LENGTH_BUCKETS = ((0, "0-99"), (100, "100-249"), (250, "250-499"), (500, "500+"))


def strip_line_breaks(text: tf.Tensor) -> tf.Tensor:
    """aclImdb keeps the reviews' HTML line breaks (`<br />`): make them spaces."""
    return tf.strings.regex_replace(text, r"<br\s*/?>", " ")


def normalize(text: tf.Tensor) -> tf.Tensor:
    """Lower-cases (Unicode-aware), turns `<br />` into spaces and sets punctuation apart."""
    text = strip_line_breaks(tf.strings.lower(text, encoding="utf-8"))
    return tf.strings.regex_replace(text, r"([\pP\pS])", r" \1 ")


def tokenize(text: tf.Tensor) -> tf.RaggedTensor:
    """(B,) strings -> (B, None) ragged tokens, split on whitespace after `normalize`."""
    return tf.strings.split(normalize(text))


def truncate(ids: tf.RaggedTensor, max_length: int, head: int) -> tf.RaggedTensor:
    """Keeps at most `max_length` ids per row: the first `head` and the last `max_length - head`.

    head == max_length keeps the beginning only. Reviews often give their verdict at the end,
    which head-only truncation drops (Sun et al., 2019, "How to Fine-Tune BERT for Text
    Classification?", found head+tail truncation best on IMDB).
    """
    if not 0 <= head <= max_length:
        raise ValueError(f"head={head} must be between 0 and max_length={max_length}")
    lengths = ids.row_lengths()
    positions = tf.ragged.range(lengths)
    tail_start = tf.expand_dims(lengths - (max_length - head), 1)
    return tf.ragged.boolean_mask(ids, (positions < head) | (positions >= tail_start))


def pad_ids(ids: tf.RaggedTensor, max_length: int) -> tf.Tensor:
    """Ragged vocabulary ids (0-based) -> (B, max_length) int64, shifted by one, 0 = padding."""
    dense = ids.to_tensor(default_value=-1, shape=[None, max_length])  # truncates and pads
    return tf.cast(dense + 1, tf.int64)


def length_bucket(tokens: tf.RaggedTensor, buckets=LENGTH_BUCKETS) -> tf.Tensor:
    """(B,) bucket names by token count; `buckets` = ((first length, name), ...), ascending."""
    lengths = tokens.row_lengths()
    bucket = tf.fill(tf.shape(lengths), buckets[0][1])
    for start, name in buckets[1:]:
        bucket = tf.where(lengths >= start, name, bucket)
    return bucket


def as_vector(tensor: tf.Tensor) -> tf.Tensor:
    """(B,) or (B, 1) -> (B,): SchemaGen may infer a fixed shape of [1] for scalar features."""
    if isinstance(tensor, tf.SparseTensor):
        tensor = tf.sparse.to_dense(tensor, default_value="" if tensor.dtype == tf.string else 0)
    return tf.reshape(tensor, [-1])


def preprocessing_fn(inputs: Mapping[str, tf.Tensor],
                     custom_config: Mapping[str, Any]) -> dict:
    """Raw review features -> token ids, length bucket and label.

    custom_config: `vocab_size` (top-k words kept), `max_length` (tokens per review) and
    `truncation_head` (how many of those come from the beginning; the rest from the end).
    """
    tokens = tokenize(as_vector(inputs[features.TEXT]))
    ids = tft.compute_and_apply_vocabulary(
        tokens,
        top_k=int(custom_config["vocab_size"]),
        num_oov_buckets=NUM_OOV_BUCKETS,
        vocab_filename=VOCABULARY_NAME,
    )
    max_length = int(custom_config["max_length"])
    head = int(custom_config.get("truncation_head", max_length))
    outputs = {
        features.TOKEN_IDS: pad_ids(truncate(ids, max_length, head), max_length),
        features.LENGTH_BUCKET: length_bucket(tokens),
    }
    if features.LABEL in inputs:  # absent when serving raw text
        outputs[features.TRANSFORMED_LABEL] = tf.cast(as_vector(inputs[features.LABEL]), tf.int64)
    return outputs


def embedding_rows(tf_transform_output: tft.TFTransformOutput) -> int:
    """Ids the model must embed: padding, the learned vocabulary and the OOV bucket."""
    return 1 + tf_transform_output.vocabulary_size_by_name(VOCABULARY_NAME) + NUM_OOV_BUCKETS
