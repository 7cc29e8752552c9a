"""tf.Transform preprocessing for translation: vocabularies, [START]/[END], shift, pad.

Ids: 0 = padding, 1 = [UNK], 2 = [START], 3 = [END], then the vocabulary. With the default
`tokenizer` "wordpiece", the vocabulary is WordPiece pieces learned from the training split in
this Transform (wordpiece.py), case and punctuation kept; with "word", lower-cased words with
punctuation split off (the published Multi30k recipes' tokenization), top-k by frequency
(`tft.vocabulary`). The decoder reads `[START] y1 ... yn` (`decoder_input_ids`) and learns to
emit `y1 ... yn [END]` (`target_ids`), both padded with 0 to `max_target_length`.

`reference` is the raw target: BLEU compares it with the served model's translation, with
sacreBLEU's tokenization (metrics.py).
"""

from typing import Any, Mapping

import tensorflow as tf
import tensorflow_transform as tft

from trainer_module import features
from trainer_module.preprocessing.text import as_vector, length_bucket, tokenize
from trainer_module.translator import wordpiece
from trainer_module.translator.config import (
    DECODER_INPUT_IDS,
    END_ID,
    PAD_ID,
    RESERVED_TOKENS,
    SOURCE_IDS,
    START_ID,
    TARGET_IDS,
    UNK_ID,
)

SOURCE_VOCABULARY = "source_vocabulary"
TARGET_VOCABULARY = "target_vocabulary"
# The words of the training targets: with a shared vocabulary, their ids are what the search
# may write (output_ids; the pieces seen only in sources are never a target).
TARGET_WORDS = "target_words"
# Source length (tokens) at which each TFMA slice bucket starts.
LENGTH_BUCKETS = ((0, "1-9"), (10, "10-14"), (15, "15-19"), (20, "20+"))


def apply_vocabulary(tokens: tf.RaggedTensor, vocabulary) -> tf.RaggedTensor:
    """Words -> ids: vocabulary rank + 4, [UNK] for words outside it."""
    ranks = tft.apply_vocabulary(tokens, vocabulary, default_value=-1)
    return tf.ragged.map_flat_values(
        lambda r: tf.where(r < 0, tf.constant(UNK_ID, tf.int64), r + len(RESERVED_TOKENS)), ranks
    )


def pad(ids: tf.RaggedTensor, length: int) -> tf.Tensor:
    """(B, None) -> (B, length) int64, truncated or padded with 0."""
    return tf.cast(ids.to_tensor(default_value=PAD_ID, shape=[None, length]), tf.int64)


def shift_target(ids: tf.RaggedTensor, length: int):
    """(decoder_input_ids, target_ids): `[START] y1..yn` and `y1..yn [END]`, n <= length - 1."""
    ids = ids[:, : length - 1]
    batch = ids.nrows()
    start = tf.fill([batch, 1], tf.constant(START_ID, tf.int64))
    end = tf.fill([batch, 1], tf.constant(END_ID, tf.int64))
    return (
        pad(tf.concat([start, ids], axis=1), length),
        pad(tf.concat([ids, end], axis=1), length),
    )


@tf.autograph.experimental.do_not_convert  # TF ops alone (trainer_module/preprocessing)
def preprocessing_fn(inputs: Mapping[str, tf.Tensor], custom_config: Mapping[str, Any]) -> dict:
    """Raw `source`/`target` strings -> padded id sequences, the reference text and a slice key.

    custom_config (config.transform_config): `tokenizer`, `source_vocab_size`,
    `target_vocab_size`, `min_frequency`, `shared_vocabulary`, `max_source_length`,
    `max_target_length`.
    """
    source, target = as_vector(inputs[features.SOURCE]), as_vector(inputs[features.TARGET])
    if custom_config.get("tokenizer", "wordpiece") == "wordpiece":
        ids, words = _wordpiece_ids(source, target, custom_config)
    else:
        ids, words = _word_ids(source, target, custom_config)
    (source_ids, target_ids), (source_words, target_words) = ids, words
    if custom_config.get("shared_vocabulary"):
        # An asset for output_ids, not an output. Of the words, not of the ids: an analyzer of
        # the ids waits for the vocabulary's, in a second analysis phase, whose deep copy of
        # the input fails with this Beam version (as the tests' Transform, local.py, does).
        tft.vocabulary(target_words.flat_values, vocab_filename=TARGET_WORDS)
    decoder_input_ids, target_ids = shift_target(
        target_ids, int(custom_config["max_target_length"])
    )
    return {
        SOURCE_IDS: pad(source_ids, int(custom_config["max_source_length"])),
        DECODER_INPUT_IDS: decoder_input_ids,
        TARGET_IDS: target_ids,
        # What BLEU compares with: the whole target as written (metrics.py tokenizes it).
        features.REFERENCE: target,
        features.SOURCE_LENGTH_BUCKET: length_bucket(source_words, LENGTH_BUCKETS),
    }


def _wordpiece_ids(source: tf.Tensor, target: tf.Tensor, custom_config: Mapping[str, Any]):
    """((source piece ids, target piece ids), (source words, target words)) with learned
    WordPiece vocabularies."""
    source_words, target_words = wordpiece.split_words(source), wordpiece.split_words(target)
    if custom_config.get("shared_vocabulary"):
        source_vocabulary = target_vocabulary = wordpiece.vocabulary(
            tf.concat([source_words, target_words], axis=0),
            int(custom_config["source_vocab_size"]) + int(custom_config["target_vocab_size"]),
            TARGET_VOCABULARY,
        )
    else:
        source_vocabulary = wordpiece.vocabulary(
            source_words, int(custom_config["source_vocab_size"]), SOURCE_VOCABULARY
        )
        target_vocabulary = wordpiece.vocabulary(
            target_words, int(custom_config["target_vocab_size"]), TARGET_VOCABULARY
        )
    return (
        (
            wordpiece.apply(source_words, source_vocabulary),
            wordpiece.apply(target_words, target_vocabulary),
        ),
        (source_words, target_words),
    )


def _word_ids(source: tf.Tensor, target: tf.Tensor, custom_config: Mapping[str, Any]):
    """((source word ids, target word ids), (source words, target words)) with top-k word
    vocabularies."""
    source_tokens, target_tokens = tokenize(source), tokenize(target)
    given = int(custom_config["min_frequency"])
    min_frequency = given if given > 1 else None  # 1 keeps every word
    if custom_config.get("shared_vocabulary"):
        source_vocabulary = target_vocabulary = tft.vocabulary(
            tf.concat([source_tokens, target_tokens], axis=0),
            top_k=int(custom_config["source_vocab_size"]) + int(custom_config["target_vocab_size"]),
            frequency_threshold=min_frequency,
            vocab_filename=TARGET_VOCABULARY,
        )
    else:
        source_vocabulary = tft.vocabulary(
            source_tokens,
            top_k=int(custom_config["source_vocab_size"]),
            frequency_threshold=min_frequency,
            vocab_filename=SOURCE_VOCABULARY,
        )
        target_vocabulary = tft.vocabulary(
            target_tokens,
            top_k=int(custom_config["target_vocab_size"]),
            frequency_threshold=min_frequency,
            vocab_filename=TARGET_VOCABULARY,
        )
    return (
        (
            apply_vocabulary(source_tokens, source_vocabulary),
            apply_vocabulary(target_tokens, target_vocabulary),
        ),
        (source_tokens, target_tokens),
    )


def vocabulary_tokens(tf_transform_output: tft.TFTransformOutput, name: str) -> list:
    """Every token the model can emit or read, by id: the reserved tokens, then the vocabulary
    (a WordPiece vocabulary file holds the reserved tokens itself)."""
    if name == SOURCE_VOCABULARY and _is_shared(tf_transform_output):
        name = TARGET_VOCABULARY
    tokens = [w.decode("utf-8") for w in tf_transform_output.vocabulary_by_name(name)]
    if tokens[: len(RESERVED_TOKENS)] == list(RESERVED_TOKENS):
        return tokens
    return list(RESERVED_TOKENS) + tokens


def is_wordpiece(tf_transform_output: tft.TFTransformOutput) -> bool:
    """Whether the transform graph's vocabularies are WordPiece's (wordpiece.py)."""
    (first,) = tf_transform_output.vocabulary_by_name(TARGET_VOCABULARY)[:1]
    return first.decode("utf-8") == RESERVED_TOKENS[0]


def vocabulary_sizes(tf_transform_output: tft.TFTransformOutput) -> dict:
    """The config's vocabulary sizes as Transform computed them (shared: the same for both)."""
    return {
        "source_vocab_size": len(vocabulary_tokens(tf_transform_output, SOURCE_VOCABULARY))
        - len(RESERVED_TOKENS),
        "target_vocab_size": len(vocabulary_tokens(tf_transform_output, TARGET_VOCABULARY))
        - len(RESERVED_TOKENS),
    }


def _is_shared(tf_transform_output: tft.TFTransformOutput) -> bool:
    path = tf_transform_output.vocabulary_file_by_name(SOURCE_VOCABULARY)
    return path is None or not tf.io.gfile.exists(path)


def output_ids(tf_transform_output: tft.TFTransformOutput):
    """The ids a shared-vocabulary model may write, sorted: the reserved tokens and the ids of
    every word of the training targets (those past max_target_length included); None where
    every id may be written (separate vocabularies, or a transform graph without the asset)."""
    path = tf_transform_output.vocabulary_file_by_name(TARGET_WORDS)
    if not _is_shared(tf_transform_output) or path is None or not tf.io.gfile.exists(path):
        return None
    words = tf_transform_output.vocabulary_by_name(TARGET_WORDS)
    if is_wordpiece(tf_transform_output):
        vocabulary = tf_transform_output.vocabulary_file_by_name(TARGET_VOCABULARY)
        ids = wordpiece.tokenize(tf.ragged.constant([words], tf.string), vocabulary)
        seen = set(ids.flat_values.numpy().tolist())
    else:
        tokens = vocabulary_tokens(tf_transform_output, TARGET_VOCABULARY)
        index = {token: i for i, token in enumerate(tokens)}
        seen = {index.get(w.decode("utf-8"), UNK_ID) for w in words}
    return sorted(seen | set(range(len(RESERVED_TOKENS))))
