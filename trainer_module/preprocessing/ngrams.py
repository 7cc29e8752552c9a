"""The wide path's preprocessing (NBSVM, Wang and Manning, 2012), shared by the text families:
each review's distinct hashed word n-grams (uni-, bi- and trigrams), and a tf.Transform analyzer
that counts, over the training split, how many reviews of each class hold each hashed id and
turns the counts into naive-Bayes log-count ratios (above two classes, each class's against the
rest). The model's side is trainer_module/layers/ngram.py."""

import io
import os
from typing import Optional

import apache_beam as beam
import numpy as np
import tensorflow as tf
import tensorflow_transform as tft
import tensorflow_transform.beam as tft_beam

NGRAM_IDS = "ngram_ids"  # int64 (B, max_ngrams): hashed word n-grams, 1..buckets; 0 pads
# Asset: (buckets + 1,) float32 naive-Bayes log-count ratios; (buckets + 1, C) above 2 classes.
NGRAM_RATIOS = "ngram_nb_ratios"
SMOOTHING = 1.0  # the ratios' additive smoothing (alpha), Wang and Manning's
KEY_NGRAMS = 16  # n-gram ids hashed to place a review in or out of the held-out slice


def distinct_ngram_ids(
    tokens: tf.RaggedTensor, buckets: int, max_ngrams: int, order: int = 3
) -> tf.Tensor:
    """(B, None) words -> (B, max_ngrams) int64: each review's distinct word unigrams, then
    bigrams, and so on up to `order`-grams, hashed into 1..buckets
    (`tf.strings.to_hash_bucket_fast`), in order of first appearance, the first max_ngrams
    kept; 0 pads."""
    grams = tf.strings.ngrams(tokens, ngram_width=tuple(range(1, order + 1)), separator=" ")
    ids = tf.strings.to_hash_bucket_fast(grams.flat_values, buckets) + 1
    # One key per (review, id); tf.unique keeps first appearances in order, so rows stay sorted
    # (and the ragged constructor's checks, most of this function's tracing time, are skipped).
    keys, _ = tf.unique(grams.value_rowids() * (buckets + 1) + ids)
    distinct = tf.RaggedTensor.from_value_rowids(
        keys % (buckets + 1), keys // (buckets + 1), nrows=grams.nrows(), validate=False
    )
    return distinct.to_tensor(default_value=0, shape=[None, max_ngrams])


def naive_bayes_ratios(counts: np.ndarray, alpha: float = SMOOTHING) -> np.ndarray:
    """(2, V + 1) reviews per class holding each id -> (V + 1,) float32 log(p / |p|_1) -
    log(q / |q|_1) with p = alpha + the class-1 counts, q = alpha + the class-0 counts over
    ids 1..V (Wang and Manning, 2012, section 2.1); id 0 (padding) gets 0.

    (C, V + 1) counts of C > 2 classes -> (V + 1, C): column k the ratios of class k against
    the rest (p = alpha + class k's counts, q = alpha + the other classes' counts), as NBSVM
    is applied to more classes one-vs-rest."""
    if len(counts) == 2:
        positive, negative = counts[1, 1:] + alpha, counts[0, 1:] + alpha
        ratios = np.log(positive / positive.sum()) - np.log(negative / negative.sum())
        return np.concatenate([[0.0], ratios]).astype("float32")
    inside = counts[:, 1:].astype("float64") + alpha
    outside = counts[:, 1:].sum(axis=0, keepdims=True) - counts[:, 1:] + alpha
    ratios = np.log(inside / inside.sum(axis=1, keepdims=True)) - np.log(
        outside / outside.sum(axis=1, keepdims=True)
    )
    return np.concatenate([np.zeros((len(counts), 1)), ratios], axis=1).T.astype("float32")


class NaiveBayesRatios(tft_beam.experimental.PTransformAnalyzer):
    """Beam: batches of (n-gram ids (B, M), labels (B,): 0 .. classes - 1, or -1 for a review
    not to count) -> the path of an .npy file of the naive-Bayes log-count ratios
    (`naive_bayes_ratios`) of the counts of training reviews of each class that hold each id.
    Fixed-size count accumulators, summed across workers like tf.Transform's own analyzers; the
    ratios are taken once, from the sums."""

    def __init__(self, buckets: int, classes: int = 2):
        super().__init__()
        self.buckets = buckets
        self.classes = classes

    def expand(self, batches):
        return (
            batches
            | "Count" >> beam.Map(self._count)
            | "Sum" >> beam.CombineGlobally(_SumCounts((self.classes, self.buckets + 1)))
            | "Ratios" >> beam.Map(naive_bayes_ratios)
            | "Write" >> beam.Map(self._write)
        )

    def _count(self, batch) -> np.ndarray:
        ids, labels = np.asarray(batch[0]), np.asarray(batch[1]).reshape(-1)
        counts = np.stack(
            [
                np.bincount(ids[labels == label].ravel(), minlength=self.buckets + 1)
                for label in range(self.classes)
            ]
        )
        counts[:, 0] = 0  # padding
        return counts

    def _write(self, ratios: np.ndarray) -> np.ndarray:
        tf.io.gfile.makedirs(self.base_temp_dir)
        path = os.path.join(self.base_temp_dir, NGRAM_RATIOS)
        buffer = io.BytesIO()
        np.save(buffer, ratios)
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


def ngram_ratio_analyzer(
    ngram_ids: tf.Tensor, labels: tf.Tensor, buckets: int, classes: int = 2
) -> tf.Tensor:
    """A tf.Transform analyzer: the path of the NGRAM_RATIOS asset (NaiveBayesRatios)."""
    (path,) = tft.experimental.ptransform_analyzer(
        [ngram_ids, labels],
        NaiveBayesRatios(buckets, classes),
        [tf.string],
        [[]],
        output_asset_default_values=[b""],
        name=NGRAM_RATIOS,
    )
    return path


def ngram_ratios(tf_transform_output: tft.TFTransformOutput) -> np.ndarray:
    """The naive-Bayes ratios of the n-gram ids Transform wrote (NGRAM_RATIOS): (buckets + 1,),
    or (buckets + 1, C) above two classes."""
    path = tf_transform_output.vocabulary_file_by_name(NGRAM_RATIOS)
    if path is None:
        raise FileNotFoundError(
            f"no {NGRAM_RATIOS} asset in {tf_transform_output.transform_savedmodel_dir}: "
            "was Transform run with ngram_buckets (by this version)?"
        )
    with tf.io.gfile.GFile(path, "rb") as f:
        return np.load(io.BytesIO(f.read()))


def held_out(ngram_ids: tf.Tensor, percent: int) -> tf.Tensor:
    """(..., M) n-gram ids -> (...) bool: whether each review is in the held-out slice of the
    training split that trains neither path, by a hash of its first KEY_NGRAMS ids (the same
    review lands on the same side wherever it is read: here and in the Trainer)."""
    key = tf.strings.reduce_join(
        tf.strings.as_string(ngram_ids[..., :KEY_NGRAMS]), axis=-1, separator=" "
    )
    return tf.strings.to_hash_bucket_fast(key, 100) < percent


def ngram_features(
    tokens: tf.RaggedTensor,
    labels: Optional[tf.Tensor],
    buckets: int,
    max_ngrams: int,
    order: int = 3,
    holdout_percent: int = 0,
    classes: int = 2,
) -> tf.Tensor:
    """(B, None) words -> NGRAM_IDS (B, max_ngrams), n-grams up to `order` words; with `labels`
    (B,) (the training graph, not serving) the NGRAM_RATIOS analyzer runs over them, less the
    reviews of the held-out slice (`held_out`): the ratios of the reviews on which the paths'
    combination is fitted must not have seen their labels.

    In a preprocessing_fn, call it before any other analyzer's output is used: created after a
    vocabulary's lookup table, tf.Transform puts this analyzer in a second analysis phase, whose
    deep copy of the input fails with this Beam version (tests/e2e catch it)."""
    ngram_ids = distinct_ngram_ids(tokens, buckets, max_ngrams, order)
    if labels is not None:
        counted = tf.where(held_out(ngram_ids, holdout_percent), tf.constant(-1, tf.int64), labels)
        path = ngram_ratio_analyzer(ngram_ids, counted, buckets, classes)
        # Ties the analyzer to an output, so that tf.Transform runs it (nothing in the graph
        # reads the ratios: the trainer sets them in the model).
        ngram_ids += 0 * tf.cast(tf.strings.length(path), tf.int64)
    return ngram_ids


def wide_path_features(tokens: tf.RaggedTensor, labels: Optional[tf.Tensor], custom_config) -> dict:
    """A text family's preprocessing_fn's wide-path outputs: {NGRAM_IDS: ...} (ngram_features)
    as custom_config sets them (WidePathConfig.wide_transform_config), or {} with
    `ngram_buckets` 0 or absent."""
    buckets = int(custom_config.get("ngram_buckets", 0))
    if not buckets:
        return {}
    return {
        NGRAM_IDS: ngram_features(
            tokens,
            labels,
            buckets,
            int(custom_config["max_ngrams"]),
            int(custom_config.get("ngram_order", 3)),
            int(custom_config.get("holdout_percent", 0)),
            int(custom_config.get("num_classes", 2)),
        )
    }
