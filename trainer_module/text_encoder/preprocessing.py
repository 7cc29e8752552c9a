"""tf.Transform preprocessing for the text encoder: normalise, tokenise, vocabulary, pad; and
for the wide path, each review's distinct hashed word n-grams, with their naive-Bayes ratios
over the training split (trainer_module/preprocessing/ngrams.py).

The same graph runs in the Transform component (over the whole training split, where the
analyzers see every review) and inside the served model.
"""

from typing import Any, Mapping

import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import faults, features
from trainer_module.preprocessing.classes import record_classes
from trainer_module.preprocessing.ngrams import wide_path_features
from trainer_module.preprocessing.text import as_vector, review_length_bucket, tokenize, truncate
from trainer_module.text_encoder.config import NUM_OOV_BUCKETS, PAD_ID

TOKEN_IDS = "token_ids"  # int64 (B, max_length), 0 = padding
VOCABULARY_NAME = "text_vocabulary"


def pad_ids(ids: tf.RaggedTensor, max_length: int) -> tf.Tensor:
    """Ragged vocabulary ids (0-based) -> (B, max_length) int64, shifted by one, 0 = padding."""
    dense = ids.to_tensor(default_value=PAD_ID - 1, shape=[None, max_length])  # truncates, pads
    return tf.cast(dense + 1, tf.int64)


@tf.autograph.experimental.do_not_convert  # TF ops alone (trainer_module/preprocessing)
def preprocessing_fn(inputs: Mapping[str, tf.Tensor], custom_config: Mapping[str, Any]) -> dict:
    """Raw review features -> token ids, length bucket, label, and with the wide path n-gram ids.

    custom_config (config.transform_config): `vocab_size` (top-k words kept), `max_length`
    (tokens per review), `truncation_head` (how many of those come from the beginning),
    and the wide path's `ngram_buckets` (0: none), `ngram_order` and `max_ngrams`.
    """
    faults.point("transform")
    text = as_vector(inputs[features.TEXT])
    tokens = tokenize(text)
    outputs = {features.LENGTH_BUCKET: review_length_bucket(tokens)}
    if features.LABEL in inputs:  # absent when serving raw text
        outputs[features.LABEL] = tf.cast(as_vector(inputs[features.LABEL]), tf.int64)
    # The n-gram analyzer comes before the vocabulary's (ngrams.ngram_features says why).
    outputs.update(wide_path_features(tokens, outputs.get(features.LABEL), custom_config))
    record_classes(inputs, outputs.get(features.LABEL))
    ids = tft.compute_and_apply_vocabulary(
        tokens,
        top_k=int(custom_config["vocab_size"]),
        num_oov_buckets=NUM_OOV_BUCKETS,
        vocab_filename=VOCABULARY_NAME,
    )
    max_length = int(custom_config["max_length"])
    head = int(custom_config.get("truncation_head", max_length))
    outputs[TOKEN_IDS] = pad_ids(truncate(ids, max_length, head), max_length)
    return outputs


def vocabulary_size(tf_transform_output: tft.TFTransformOutput) -> int:
    """Words in the vocabulary Transform computed (the config's vocab_size at most)."""
    return tf_transform_output.vocabulary_size_by_name(VOCABULARY_NAME)
