"""tf.Transform preprocessing for translation: word-level vocabularies, [START]/[END], shift, pad.

Ids: 0 = padding, 1 = [UNK], 2 = [START], 3 = [END], then the analyzer's vocabulary (most
frequent first). The decoder reads `[START] y1 ... yn` (`decoder_input_ids`) and learns to
emit `y1 ... yn [END]` (`target_ids`), both padded with 0 to `max_target_length`.

Why words, not subwords: the published Multi30k numbers this project compares with are
word-level, lower-cased and tokenized, and a word vocabulary is what a tf.Transform analyzer
computes in one pass (`tft.vocabulary` with a frequency threshold). A subword vocabulary would
have to be learned before Transform (it is not an analyzer) and stored beside the data.
"""
from typing import Any, Mapping

import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.preprocessing.text import as_vector, length_bucket, tokenize
from trainer_module.translator.config import (DECODER_INPUT_IDS, END_ID, PAD_ID, RESERVED_TOKENS,
                                              SOURCE_IDS, START_ID, TARGET_IDS, UNK_ID)

SOURCE_VOCABULARY = "source_vocabulary"
TARGET_VOCABULARY = "target_vocabulary"
# Source length (tokens) at which each TFMA slice bucket starts.
LENGTH_BUCKETS = ((0, "1-9"), (10, "10-14"), (15, "15-19"), (20, "20+"))


def apply_vocabulary(tokens: tf.RaggedTensor, vocabulary) -> tf.RaggedTensor:
    """Words -> ids: vocabulary rank + 4, [UNK] for words outside it."""
    ranks = tft.apply_vocabulary(tokens, vocabulary, default_value=-1)
    return tf.ragged.map_flat_values(
        lambda r: tf.where(r < 0, tf.constant(UNK_ID, tf.int64), r + len(RESERVED_TOKENS)), ranks)


def pad(ids: tf.RaggedTensor, length: int) -> tf.Tensor:
    """(B, None) -> (B, length) int64, truncated or padded with 0."""
    return tf.cast(ids.to_tensor(default_value=PAD_ID, shape=[None, length]), tf.int64)


def shift_target(ids: tf.RaggedTensor, length: int):
    """(decoder_input_ids, target_ids): `[START] y1..yn` and `y1..yn [END]`, n <= length - 1."""
    ids = ids[:, : length - 1]
    batch = ids.nrows()
    start = tf.fill([batch, 1], tf.constant(START_ID, tf.int64))
    end = tf.fill([batch, 1], tf.constant(END_ID, tf.int64))
    return (pad(tf.concat([start, ids], axis=1), length),
            pad(tf.concat([ids, end], axis=1), length))


def preprocessing_fn(inputs: Mapping[str, tf.Tensor], custom_config: Mapping[str, Any]) -> dict:
    """Raw `source`/`target` strings -> padded id sequences, the reference text and a slice key.

    custom_config (config.transform_config): `source_vocab_size`, `target_vocab_size`,
    `min_frequency`, `shared_vocabulary`, `max_source_length`, `max_target_length`.
    """
    source_tokens = tokenize(as_vector(inputs[features.SOURCE]))
    target_tokens = tokenize(as_vector(inputs[features.TARGET]))
    min_frequency = int(custom_config["min_frequency"])
    min_frequency = min_frequency if min_frequency > 1 else None  # 1 keeps every word
    if custom_config.get("shared_vocabulary"):
        source_vocabulary = target_vocabulary = tft.vocabulary(
            tf.concat([source_tokens, target_tokens], axis=0),
            top_k=int(custom_config["source_vocab_size"]) + int(custom_config["target_vocab_size"]),
            frequency_threshold=min_frequency, vocab_filename=TARGET_VOCABULARY)
    else:
        source_vocabulary = tft.vocabulary(
            source_tokens, top_k=int(custom_config["source_vocab_size"]),
            frequency_threshold=min_frequency, vocab_filename=SOURCE_VOCABULARY)
        target_vocabulary = tft.vocabulary(
            target_tokens, top_k=int(custom_config["target_vocab_size"]),
            frequency_threshold=min_frequency, vocab_filename=TARGET_VOCABULARY)
    decoder_input_ids, target_ids = shift_target(
        apply_vocabulary(target_tokens, target_vocabulary), int(custom_config["max_target_length"]))
    return {
        SOURCE_IDS: pad(apply_vocabulary(source_tokens, source_vocabulary),
                                 int(custom_config["max_source_length"])),
        DECODER_INPUT_IDS: decoder_input_ids,
        TARGET_IDS: target_ids,
        # What BLEU compares with: the whole target, tokenized as the model writes it.
        features.REFERENCE: tf.strings.reduce_join(target_tokens, axis=-1, separator=" "),
        features.SOURCE_LENGTH_BUCKET: length_bucket(source_tokens, LENGTH_BUCKETS),
    }


def vocabulary_tokens(tf_transform_output: tft.TFTransformOutput, name: str) -> list:
    """Every token the model can emit or read, by id: the reserved tokens, then the vocabulary."""
    if name == SOURCE_VOCABULARY and _is_shared(tf_transform_output):
        name = TARGET_VOCABULARY
    words = [w.decode("utf-8") for w in tf_transform_output.vocabulary_by_name(name)]
    return list(RESERVED_TOKENS) + words


def vocabulary_sizes(tf_transform_output: tft.TFTransformOutput) -> dict:
    """The config's vocabulary sizes as Transform computed them (shared: the same for both)."""
    return {"source_vocab_size": len(vocabulary_tokens(tf_transform_output, SOURCE_VOCABULARY))
            - len(RESERVED_TOKENS),
            "target_vocab_size": len(vocabulary_tokens(tf_transform_output, TARGET_VOCABULARY))
            - len(RESERVED_TOKENS)}


def _is_shared(tf_transform_output: tft.TFTransformOutput) -> bool:
    path = tf_transform_output.vocabulary_file_by_name(SOURCE_VOCABULARY)
    return path is None or not tf.io.gfile.exists(path)
