"""The wide path's model side (NBSVM, Wang and Manning, 2012): a logistic regression over each
review's distinct hashed n-grams, weighted by naive-Bayes log-count ratios. Its ids and counts come
from tf.Transform (trainer_module/preprocessing/ngrams.py)."""

import keras
import numpy as np
from keras import ops


class NgramLogit(keras.layers.Layer):
    """NBSVM's logistic regression (Wang and Manning, 2012): (B, M) n-gram ids -> (B,) logits
    sum_j r[id_j] * s * w[id_j] over each review's distinct ids (s: `rate_scale`, which scales
    the weights' learning rate under Adam). r (`ratios`, not trained) holds
    the naive-Bayes log-count ratios, set once from Transform's counts (`set_ratios`); w starts
    at zero, so the scaling makes the trained weights move most for the n-grams whose counts
    already separate the classes. Id 0 (padding) has ratio 0. Kept in float32."""

    def __init__(self, buckets: int, rate_scale: float = 1.0, **kwargs):
        super().__init__(dtype="float32", **kwargs)
        self.buckets, self.rate_scale = buckets, rate_scale

    def build(self, input_shape):
        self.ratios = self.add_weight(
            name="ratios", shape=(self.buckets + 1,), initializer="zeros", trainable=False
        )
        self.coefficients = self.add_weight(
            name="coefficients", shape=(self.buckets + 1,), initializer="zeros"
        )

    def set_ratios(self, ratios: np.ndarray) -> None:
        self.ratios.assign(np.asarray(ratios, "float32"))

    def call(self, ngram_ids):
        ngram_ids = ops.cast(ngram_ids, "int32")  # Keras builds a model on float inputs
        weights = ops.take(self.coefficients, ngram_ids) * self.rate_scale
        return ops.sum(ops.take(self.ratios, ngram_ids) * weights, axis=1)

    def get_config(self):
        return {**super().get_config(), "buckets": self.buckets, "rate_scale": self.rate_scale}


def naive_bayes_ratios(counts: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """(2, V) reviews per class holding each id -> (V,) log(p / |p|) - log(q / |q|) with
    p = alpha + the class-1 counts, q = alpha + the class-0 counts; id 0 (padding) gets 0."""
    positive, negative = counts[1] + alpha, counts[0] + alpha
    ratios = np.log(positive / positive.sum()) - np.log(negative / negative.sum())
    ratios[0] = 0.0
    return ratios.astype("float32")


def add_to_logits(logits, wide):
    """(B, 2) logits + the wide path's (B,) evidence for class 1, split evenly between the two
    classes (their difference, which the softmax sees, moves by `wide`)."""
    return logits + ops.stack([-wide / 2, wide / 2], axis=-1)
