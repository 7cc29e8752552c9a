"""The wide path's preprocessing (NBSVM, Wang and Manning, 2012), shared by the text families:
each review's distinct hashed word uni- and bigrams, and a tf.Transform analyzer counting, over
the training split, how many reviews of each class hold each hashed id. The model's side is
trainer_module/layers/ngram.py."""

import io
import os
from typing import Optional

import apache_beam as beam
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam

NGRAM_IDS = "ngram_ids"  # int64 (B, max_ngrams): hashed uni- and bigrams, 1..buckets; 0 pads
NGRAM_COUNTS = "ngram_class_counts"  # asset: (2, buckets + 1) training reviews per class and id


def distinct_ngram_ids(tokens: tf.RaggedTensor, buckets: int, max_ngrams: int) -> tf.Tensor:
    """(B, None) words -> (B, max_ngrams) int64: each review's distinct word unigrams, then
    bigrams, hashed into 1..buckets (`tf.strings.to_hash_bucket_fast`), in order of first
    appearance, the first max_ngrams kept; 0 pads."""
    grams = tf.strings.ngrams(tokens, ngram_width=(1, 2), separator=" ")
    ids = tf.strings.to_hash_bucket_fast(grams.flat_values, buckets) + 1
    # One key per (review, id); tf.unique keeps first appearances in order, so rows stay sorted
    # (and the ragged constructor's checks, most of this function's tracing time, are skipped).
    keys, _ = tf.unique(grams.value_rowids() * (buckets + 1) + ids)
    distinct = tf.RaggedTensor.from_value_rowids(
        keys % (buckets + 1), keys // (buckets + 1), nrows=grams.nrows(), validate=False
    )
    return distinct.to_tensor(default_value=0, shape=[None, max_ngrams])


class CountNgramClasses(tft_beam.experimental.PTransformAnalyzer):
    """Beam: batches of (n-gram ids (B, M), labels (B,)) -> the path of an .npy file of
    (2, buckets + 1) counts: how many training reviews of each class hold each id. Fixed-size
    accumulators, summed across workers like tf.Transform's own analyzers."""

    def __init__(self, buckets: int):
        super().__init__()
        self.buckets = buckets

    def expand(self, batches):
        return (
            batches
            | "Count" >> beam.Map(self._count)
            | "Sum" >> beam.CombineGlobally(_SumCounts((2, self.buckets + 1)))
            | "Write" >> beam.Map(self._write)
        )

    def _count(self, batch) -> np.ndarray:
        ids, labels = np.asarray(batch[0]), np.asarray(batch[1]).reshape(-1)
        counts = np.stack(
            [
                np.bincount(ids[labels == label].ravel(), minlength=self.buckets + 1)
                for label in (0, 1)
            ]
        )
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
        [ngram_ids, labels],
        CountNgramClasses(buckets),
        [tf.string],
        [[]],
        output_asset_default_values=[b""],
        name=NGRAM_COUNTS,
    )
    return path


def ngram_counts(tf_transform_output: tft.TFTransformOutput) -> np.ndarray:
    """The (2, buckets + 1) class counts of the n-gram ids Transform wrote (NGRAM_COUNTS)."""
    path = tf_transform_output.vocabulary_file_by_name(NGRAM_COUNTS)
    if path is None:
        raise FileNotFoundError(
            f"no {NGRAM_COUNTS} asset in {tf_transform_output.transform_savedmodel_dir}: "
            "was Transform run with ngram_buckets?"
        )
    with tf.io.gfile.GFile(path, "rb") as f:
        return np.load(io.BytesIO(f.read()))


def ngram_features(
    tokens: tf.RaggedTensor, labels: Optional[tf.Tensor], buckets: int, max_ngrams: int
) -> tf.Tensor:
    """(B, None) words -> NGRAM_IDS (B, max_ngrams); with `labels` (B,) (the training graph,
    not serving) the NGRAM_COUNTS analyzer runs over them.

    In a preprocessing_fn, call it before any other analyzer's output is used: created after a
    vocabulary's lookup table, tf.Transform puts this analyzer in a second analysis phase, whose
    deep copy of the input fails with this Beam version (tests/e2e catch it)."""
    ngram_ids = distinct_ngram_ids(tokens, buckets, max_ngrams)
    if labels is not None:
        path = ngram_class_counts(ngram_ids, labels, buckets)
        # Ties the analyzer to an output, so that tf.Transform runs it (nothing in the graph
        # reads the counts: the trainer does).
        ngram_ids += 0 * tf.cast(tf.strings.length(path), tf.int64)
    return ngram_ids
