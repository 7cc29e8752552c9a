"""The translator's subword vocabulary: WordPiece, learned from the training split inside the
Transform component, applied by tensorflow-text ops in the transform graph (so serving uses
exactly the same vocabulary) and undone when the served model writes its translation.

Words are the whitespace-separated parts of the text, case and punctuation kept: `bike.`
is a word, which WordPiece splits into `bike ##.` when `bike.` is not in the vocabulary. Every
piece after the first of a word carries the `##` joiner, so the pieces say where the spaces
were, and decoding gives back natural text: `A man rides a bike.`, not `a man rides a bike .`.

The learner is tensorflow-text's (the BERT vocabulary tool's): word counts from the whole
split, counted by Beam (so Dataflow counts in parallel), then one vocabulary of at most
`vocab_size` pieces (the lowest count threshold that fits: learn()), written as an asset of the
transform graph.
"""

import contextlib
import os
from typing import List

import apache_beam as beam
import numpy as np
import tensorflow as tf
import tensorflow_text as text
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam

from trainer_module.translator.config import RESERVED_TOKENS

JOINER = "##"
# The learner's settings (tensorflow-text's defaults).
LEARNER_OPTIONS = dict(
    num_iterations=4,
    max_input_tokens=5_000_000,
    max_token_length=50,
    max_unique_chars=1000,
    slack_ratio=0.05,
    include_joiner_token=True,
    joiner=JOINER,
)


def split_words(texts: tf.Tensor) -> tf.RaggedTensor:
    """(B,) strings -> (B, None) words: split on whitespace, nothing else changed."""
    return tf.strings.split(texts)


def learn(word_counts, vocab_size: int) -> List[str]:
    """The vocabulary, by id: the reserved tokens, then the learned pieces; at most
    `vocab_size` + 4 tokens (more only when the alphabet alone is larger). `word_counts`:
    (word, count) pairs; the result depends on the counts alone, not their order.

    tensorflow-text's `learn` searches for the count threshold whose vocabulary is closest to
    the size, and can return one far above it (Multi30k English, 8,000 asked: 15,586 from a
    threshold of 1); this searches for the lowest threshold whose vocabulary fits.
    """
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as lib

    ordered = sorted(word_counts, key=lambda pair: (-pair[1], pair[0]))
    params = lib.Params(
        upper_thresh=None,
        lower_thresh=None,
        vocab_size=vocab_size,
        reserved_tokens=list(RESERVED_TOKENS),
        **LEARNER_OPTIONS,
    )
    counts = lib.get_input_words(ordered, params.reserved_tokens, params.max_token_length)
    counts = lib.filter_input_words(
        counts, lib.get_allowed_chars(counts, params.max_unique_chars), params.max_input_tokens
    )
    limit = vocab_size + len(RESERVED_TOKENS)
    # Vocabularies shrink as the threshold rises; above every piece's count (at most the
    # characters' occurrences), only the characters are left. The threshold that fits is
    # usually small: double it until the vocabulary fits, then bisect.
    ceiling = sum(count * len(word) for word, count in counts) + 1
    low, high = 0, 1  # the vocabulary at `low` is too large (0: not tried)
    best = lib.learn_with_thresh(counts, high, params)
    while len(best) > limit and high < ceiling:
        low, high = high, min(2 * high, ceiling)
        best = lib.learn_with_thresh(counts, high, params)
    while high - low > 1:
        middle = (low + high) // 2
        vocabulary = lib.learn_with_thresh(counts, middle, params)
        if len(vocabulary) <= limit:
            best, high = vocabulary, middle
        else:
            low = middle
    return best


class LearnVocabulary(tft_beam.experimental.PTransformAnalyzer):
    """Beam: batches of words -> the path of a vocabulary file (one piece per line)."""

    def __init__(self, vocab_size: int, filename: str):
        super().__init__()
        self.vocab_size, self.filename = vocab_size, filename

    def expand(self, batches):
        return (
            batches
            | "Words" >> beam.FlatMap(lambda batch: (w.decode("utf-8") for w in batch[0]))
            | "Count" >> beam.combiners.Count.PerElement()
            | "AllCounts" >> beam.combiners.ToList()
            | "Learn" >> beam.Map(self._write)
        )

    def _write(self, word_counts) -> np.ndarray:
        vocabulary = learn(word_counts, self.vocab_size)
        tf.io.gfile.makedirs(self.base_temp_dir)
        path = os.path.join(self.base_temp_dir, self.filename)
        with tf.io.gfile.GFile(path, "w") as f:
            f.write("".join(f"{piece}\n" for piece in vocabulary))
        return np.array(path.encode("utf-8"), dtype=object)


def vocabulary(words: tf.RaggedTensor, vocab_size: int, filename: str) -> tf.Tensor:
    """A tf.Transform analyzer: the learned vocabulary's file (an asset named `filename`)."""
    placeholder = "".join(f"{token}\n" for token in RESERVED_TOKENS).encode("utf-8")
    (path,) = tft.experimental.ptransform_analyzer(
        [words.flat_values],
        LearnVocabulary(vocab_size, filename),
        [tf.string],
        [[]],
        output_asset_default_values=[placeholder],
        name=filename,
    )
    return path


def apply(words: tf.RaggedTensor, vocabulary_path) -> tf.RaggedTensor:
    """tokenize() inside a preprocessing_fn, on an analyzer's vocabulary: through
    tft.apply_vocabulary, which hands its lookup the learned file's path, so that the table is
    built where the transform graph is loaded (as Transform's own vocabulary tables are),
    rather than reading the file again at every call of the served model."""
    return tft.apply_vocabulary(words, vocabulary_path, lookup_fn=_tokenize_with_size)


def tokenize(words: tf.RaggedTensor, vocabulary_path) -> tf.RaggedTensor:
    """(B, None) words -> (B, None) piece ids; a word with a character outside the vocabulary
    becomes [UNK]."""
    return _tokenize_with_size(words, vocabulary_path)[0]


def _tokenize_with_size(words: tf.RaggedTensor, vocabulary_path) -> tuple:
    """(tokenize(words), the vocabulary's size). The table is created outside the function
    being traced where the path is known (a string or an eager tensor), as Transform's
    tf_utils.construct_and_lookup_table does: inside it, its initializer would read the file
    at every call."""
    with contextlib.ExitStack() as stack:
        if tf.inside_function() and not tf.is_symbolic_tensor(vocabulary_path):
            stack.enter_context(tf.init_scope())
        table = tf.lookup.StaticVocabularyTable(
            tf.lookup.TextFileInitializer(
                vocabulary_path,
                tf.string,
                tf.lookup.TextFileIndex.WHOLE_LINE,
                tf.int64,
                tf.lookup.TextFileIndex.LINE_NUMBER,
            ),
            num_oov_buckets=1,  # as text.WordpieceTokenizer builds it from a path
            lookup_key_dtype=tf.string,
        )
        size = table.size()
    tokenizer = text.WordpieceTokenizer(
        table,
        suffix_indicator=JOINER,
        token_out_type=tf.int64,
        unknown_token=RESERVED_TOKENS[1],
    )
    return tokenizer.tokenize(words).merge_dims(-2, -1), size


def detokenize(pieces: tf.RaggedTensor) -> tf.Tensor:
    """(B, None) pieces -> (B,) text: a space before each piece that starts a word."""
    joined = tf.strings.reduce_join(pieces, axis=-1, separator=" ")
    return tf.strings.regex_replace(joined, " " + JOINER, "")
