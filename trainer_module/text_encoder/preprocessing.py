"""tf.Transform preprocessing for the text encoder: normalise, tokenise, vocabulary, pad.

The same graph runs in the Transform component (over the whole training split, where the
vocabulary analyzer sees every review) and inside the served model.
"""
from typing import Any, Mapping

import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.preprocessing.text import as_vector, review_length_bucket, tokenize
from trainer_module.text_encoder.config import NUM_OOV_BUCKETS, PAD_ID

TOKEN_IDS = "token_ids"  # int64 (B, max_length), 0 = padding
VOCABULARY_NAME = "text_vocabulary"


def truncate(ids: tf.RaggedTensor, max_length: int, head: int) -> tf.RaggedTensor:
    """Keeps at most `max_length` ids per row: the first `head` and the last `max_length - head`.

    head == max_length keeps the beginning only. Reviews often give their verdict at the end,
    which head-only truncation drops (Sun et al., 2019, "How to Fine-Tune BERT for Text
    Classification?", found head+tail truncation best on IMDB).
    """
    if not 0 <= head <= max_length:
        raise ValueError(f"head={head} must be between 0 and max_length={max_length}")
    # On the flat values: ragged broadcasting costs ~1 s per trace, and tf.Transform traces
    # this function about ten times.
    rows = ids.value_rowids()  # (N,): the row of each id
    position = tf.range(tf.shape(rows, out_type=rows.dtype)[0]) - tf.gather(ids.row_starts(), rows)
    tail_start = tf.gather(ids.row_lengths(), rows) - (max_length - head)
    keep = (position < head) | (position >= tail_start)
    return tf.RaggedTensor.from_value_rowids(tf.boolean_mask(ids.flat_values, keep),
                                             tf.boolean_mask(rows, keep), nrows=ids.nrows())


def pad_ids(ids: tf.RaggedTensor, max_length: int) -> tf.Tensor:
    """Ragged vocabulary ids (0-based) -> (B, max_length) int64, shifted by one, 0 = padding."""
    dense = ids.to_tensor(default_value=PAD_ID - 1, shape=[None, max_length])  # truncates, pads
    return tf.cast(dense + 1, tf.int64)


def preprocessing_fn(inputs: Mapping[str, tf.Tensor],
                     custom_config: Mapping[str, Any]) -> dict:
    """Raw review features -> token ids, length bucket and label.

    custom_config (config.transform_config): `vocab_size` (top-k words kept), `max_length`
    (tokens per review) and `truncation_head` (how many of those come from the beginning).
    """
    text = as_vector(inputs[features.TEXT])
    tokens = tokenize(text)
    ids = tft.compute_and_apply_vocabulary(
        tokens,
        top_k=int(custom_config["vocab_size"]),
        num_oov_buckets=NUM_OOV_BUCKETS,
        vocab_filename=VOCABULARY_NAME,
    )
    max_length = int(custom_config["max_length"])
    head = int(custom_config.get("truncation_head", max_length))
    outputs = {
        TOKEN_IDS: pad_ids(truncate(ids, max_length, head), max_length),
        features.LENGTH_BUCKET: review_length_bucket(tokens),
    }
    if features.LABEL in inputs:  # absent when serving raw text
        outputs[features.LABEL] = tf.cast(as_vector(inputs[features.LABEL]), tf.int64)
    return outputs


def vocabulary_size(tf_transform_output: tft.TFTransformOutput) -> int:
    """Words in the vocabulary Transform computed (the config's vocab_size at most)."""
    return tf_transform_output.vocabulary_size_by_name(VOCABULARY_NAME)
