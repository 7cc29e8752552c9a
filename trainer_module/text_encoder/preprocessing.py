"""tf.Transform preprocessing for the text encoder: normalise, tokenise, vocabulary, pad; and
for the wide path, each review's distinct hashed word uni- and bigrams, with their counts per
class over the training split.

The same graph runs in the Transform component (over the whole training split, where the
analyzers see every review) and inside the served model.
"""
import io
import os
from typing import Any, Mapping

import apache_beam as beam
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam

from trainer_module import features
from trainer_module.preprocessing.text import as_vector, review_length_bucket, tokenize
from trainer_module.text_encoder.config import NUM_OOV_BUCKETS, PAD_ID

TOKEN_IDS = "token_ids"  # int64 (B, max_length), 0 = padding
VOCABULARY_NAME = "text_vocabulary"
NGRAM_IDS = "ngram_ids"  # int64 (B, max_ngrams): hashed uni- and bigrams, 1..buckets; 0 pads
NGRAM_COUNTS = "ngram_class_counts"  # asset: (2, buckets + 1) training reviews per class and id


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


def distinct_ngram_ids(tokens: tf.RaggedTensor, buckets: int, max_ngrams: int) -> tf.Tensor:
    """(B, None) words -> (B, max_ngrams) int64: each review's distinct word unigrams, then
    bigrams, hashed into 1..buckets (`tf.strings.to_hash_bucket_fast`), in order of first
    appearance, the first max_ngrams kept; 0 pads."""
    grams = tf.strings.ngrams(tokens, ngram_width=(1, 2), separator=" ")
    ids = tf.strings.to_hash_bucket_fast(grams.flat_values, buckets) + 1
    # One key per (review, id); tf.unique keeps first appearances in order, so rows stay sorted.
    keys, _ = tf.unique(grams.value_rowids() * (buckets + 1) + ids)
    distinct = tf.RaggedTensor.from_value_rowids(keys % (buckets + 1), keys // (buckets + 1),
                                                 nrows=grams.nrows())
    return distinct.to_tensor(default_value=0, shape=[None, max_ngrams])


class CountNgramClasses(tft_beam.experimental.PTransformAnalyzer):
    """Beam: batches of (n-gram ids (B, M), labels (B,)) -> the path of an .npy file of
    (2, buckets + 1) counts: how many training reviews of each class hold each id. Fixed-size
    accumulators, summed across workers like tf.Transform's own analyzers."""

    def __init__(self, buckets: int):
        super().__init__()
        self.buckets = buckets

    def expand(self, batches):
        return (batches
                | "Count" >> beam.Map(self._count)
                | "Sum" >> beam.CombineGlobally(_SumCounts((2, self.buckets + 1)))
                | "Write" >> beam.Map(self._write))

    def _count(self, batch) -> np.ndarray:
        ids, labels = np.asarray(batch[0]), np.asarray(batch[1]).reshape(-1)
        counts = np.stack([np.bincount(ids[labels == label].ravel(), minlength=self.buckets + 1)
                           for label in (0, 1)])
        counts[:, 0] = 0  # padding
        return counts

    def _write(self, counts: np.ndarray) -> np.ndarray:
        tf.io.gfile.makedirs(self.base_temp_dir)
        path = os.path.join(self.base_temp_dir, NGRAM_COUNTS)
        buffer = io.BytesIO()
        np.save(buffer, counts)
        with tf.io.gfile.GFile(path, "wb") as f:
            f.write(buffer.getvalue())
        return np.array(path.encode("utf-8"), dtype=object)


class _SumCounts(beam.CombineFn):
    def __init__(self, shape):
        self.shape = shape

    def create_accumulator(self):
        return np.zeros(self.shape, np.int64)

    def add_input(self, total, counts):
        total += counts
        return total

    def merge_accumulators(self, totals):
        merged = self.create_accumulator()
        for total in totals:
            merged += total
        return merged

    def extract_output(self, total):
        return total


def ngram_class_counts(ngram_ids: tf.Tensor, labels: tf.Tensor, buckets: int) -> tf.Tensor:
    """A tf.Transform analyzer: the path of the NGRAM_COUNTS asset (CountNgramClasses)."""
    (path,) = tft.experimental.ptransform_analyzer(
        [ngram_ids, labels], CountNgramClasses(buckets), [tf.string], [[]],
        output_asset_default_values=[b""], name=NGRAM_COUNTS)
    return path


def preprocessing_fn(inputs: Mapping[str, tf.Tensor],
                     custom_config: Mapping[str, Any]) -> dict:
    """Raw review features -> token ids, length bucket, label, and with the wide path n-gram ids.

    custom_config (config.transform_config): `vocab_size` (top-k words kept), `max_length`
    (tokens per review), `truncation_head` (how many of those come from the beginning),
    `ngram_buckets` (0: no wide path) and `max_ngrams`.
    """
    text = as_vector(inputs[features.TEXT])
    tokens = tokenize(text)
    outputs = {features.LENGTH_BUCKET: review_length_bucket(tokens)}
    if features.LABEL in inputs:  # absent when serving raw text
        outputs[features.LABEL] = tf.cast(as_vector(inputs[features.LABEL]), tf.int64)
    # The n-gram analyzer comes before the vocabulary's: created after the vocabulary's lookup
    # table, tf.Transform puts it in a second analysis phase, whose deep copy of the input
    # fails with this Beam version (tests/e2e catch it; the in-memory tests do not).
    buckets = int(custom_config.get("ngram_buckets", 0))
    if buckets:
        ngram_ids = distinct_ngram_ids(tokens, buckets, int(custom_config["max_ngrams"]))
        if features.LABEL in inputs:
            path = ngram_class_counts(ngram_ids, outputs[features.LABEL], buckets)
            # Ties the analyzer to an output, so that tf.Transform runs it (nothing in the
            # graph reads the counts: the trainer does).
            ngram_ids += 0 * tf.cast(tf.strings.length(path), tf.int64)
        outputs[NGRAM_IDS] = ngram_ids
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


def ngram_counts(tf_transform_output: tft.TFTransformOutput) -> np.ndarray:
    """The (2, buckets + 1) class counts of the n-gram ids Transform wrote (NGRAM_COUNTS)."""
    path = tf_transform_output.vocabulary_file_by_name(NGRAM_COUNTS)
    if path is None:
        raise FileNotFoundError(
            f"no {NGRAM_COUNTS} asset in {tf_transform_output.transform_savedmodel_dir}: "
            "was Transform run with ngram_buckets?")
    with tf.io.gfile.GFile(path, "rb") as f:
        return np.load(io.BytesIO(f.read()))


def vocabulary_size(tf_transform_output: tft.TFTransformOutput) -> int:
    """Words in the vocabulary Transform computed (the config's vocab_size at most)."""
    return tf_transform_output.vocabulary_size_by_name(VOCABULARY_NAME)
