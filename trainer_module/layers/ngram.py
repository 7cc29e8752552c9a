"""The wide path's model side (NBSVM, Wang and Manning, 2012): a logistic regression over each
review's distinct hashed n-grams, weighted by naive-Bayes log-count ratios, and the combination of
its logit with a deep model's. Its ids and ratios come from tf.Transform
(trainer_module/preprocessing/ngrams.py); how the paths train, trainer_module/training/wide_path.py.
"""

from typing import TYPE_CHECKING, Optional

import keras
import numpy as np
from keras import ops

if TYPE_CHECKING:  # what the mixin is mixed into, for the type checker
    from keras import Model as _Model
else:
    _Model = object


class NgramLogit(keras.layers.Layer):
    """NBSVM's logistic regression (Wang and Manning, 2012): (B, M) n-gram ids -> (B,) logits
    b + sum_j r[id_j] * w[id_j] over each review's distinct ids. r (`ratios`, not trained) holds
    the naive-Bayes log-count ratios, set once from Transform's (`set_ratios`); w starts at
    zero, so plain gradient descent moves the weights of the n-grams whose counts already
    separate the classes most. Id 0 (padding) has ratio 0. Kept in float32.

    With `classes` above two, one regression per class against the rest (each with its own
    one-vs-rest ratios, weights and bias): (B, M) -> (B, classes) logits."""

    def __init__(self, buckets: int, classes: int = 2, **kwargs):
        super().__init__(dtype="float32", **kwargs)
        self.buckets = buckets
        self.classes = classes
        # One column per class above two; binary keeps the single regression of class 1.
        self.columns = () if classes == 2 else (classes,)

    def build(self, input_shape):
        shape = (self.buckets + 1, *self.columns)
        self.ratios = self.add_weight(
            name="ratios", shape=shape, initializer="zeros", trainable=False
        )
        self.coefficients = self.add_weight(name="coefficients", shape=shape, initializer="zeros")
        self.bias = self.add_weight(name="bias", shape=self.columns, initializer="zeros")

    def set_ratios(self, ratios: np.ndarray) -> None:
        ratios = np.asarray(ratios, "float32")
        expected = (self.buckets + 1, *self.columns)
        if ratios.shape != expected:
            raise ValueError(
                f"{self.buckets} buckets and {self.classes} classes take ratios of shape "
                f"{expected}, not {ratios.shape}: the model and Transform's n-gram ratios "
                "disagree on ngram_buckets or num_classes"
            )
        self.ratios.assign(ratios)

    def call(self, ngram_ids):
        ngram_ids = ops.cast(ngram_ids, "int32")  # Keras builds a model on float inputs
        weights = ops.take(self.coefficients, ngram_ids, axis=0)
        return ops.sum(ops.take(self.ratios, ngram_ids, axis=0) * weights, axis=1) + self.bias

    def get_config(self):
        return {**super().get_config(), "buckets": self.buckets, "classes": self.classes}


class PathCombination(keras.layers.Layer):
    """(B, 2) deep logits and the wide path's (B,) logit -> the served (B, 2) logits: the
    evidence for class 1, z = a * (deep[:, 1] - deep[:, 0]) + b * wide + c, split evenly between
    the two classes. a, b and c are fitted on held-out reviews after both paths trained
    (training/wide_path.py: a logistic regression, so the mean prediction matches the label
    mean); until then (1, 1, 0): the sum of the two paths' logits. Not trained by gradient.

    With `classes` above two: (B, C) deep logits and the wide path's (B, C) one-vs-rest logits
    -> a * deep + b * wide + c, with one intercept c_k per class (`weighting` holds a, b, c_1
    ... c_C; fitted as a softmax regression, training/wide_path.py)."""

    def __init__(self, classes: int = 2, **kwargs):
        super().__init__(dtype="float32", **kwargs)
        self.classes = classes

    def build(self, deep_shape, wide_shape=None):
        self.weighting = self.add_weight(
            name="weighting",
            shape=(self.size,),
            initializer=keras.initializers.Constant(self.summed),
            trainable=False,
        )

    @property
    def size(self) -> int:
        return 3 if self.classes == 2 else 2 + self.classes

    @property
    def summed(self) -> list:
        """The weighting that sums the two paths' logits (before a fit, or without one)."""
        return [1.0, 1.0] + [0.0] * (self.size - 2)

    def call(self, deep, wide):
        deep = ops.cast(deep, "float32")
        if self.classes != 2:
            return self.weighting[0] * deep + self.weighting[1] * wide + self.weighting[2:]
        evidence = (
            self.weighting[0] * (deep[:, 1] - deep[:, 0])
            + self.weighting[1] * wide
            + self.weighting[2]
        )
        return evidence_logits(evidence)

    def get_config(self):
        return {**super().get_config(), "classes": self.classes}


def evidence_logits(evidence):
    """(B,) evidence for class 1 -> (B, 2) logits [-e / 2, e / 2] (their difference, which the
    softmax sees, is e)."""
    return ops.stack([-evidence / 2, evidence / 2], axis=-1)


class WideAndDeep(_Model):
    """Mixed into a classifier with a deep path (its `deep_logits`) and, with
    config.ngram_buckets, the wide path: `self.ngram_logit` and `self.combination`
    (`init_wide_path`). Its call answers (B, C) logits: the deep path's, or with the wide path
    their combination; `path_logits` (the call with `paths=True`) answers the three, which
    training reads (`PathTraining`)."""

    def init_wide_path(self, buckets: int, classes: int = 2) -> None:
        self.ngram_logit: Optional[NgramLogit] = (
            NgramLogit(buckets, classes, name="ngram_logit") if buckets else None
        )
        self.combination: Optional[PathCombination] = (
            PathCombination(classes, name="combination") if buckets else None
        )

    def deep_logits(self, inputs, training=None):
        """The deep path's (B, C) logits."""
        raise NotImplementedError(f"{type(self).__name__} has no deep path")

    def call(self, inputs, training=None, paths=False):
        deep = self.deep_logits(inputs, training=training)
        if self.ngram_logit is None or self.combination is None:
            if paths:
                raise ValueError("each path's logits need the wide path (config.ngram_buckets)")
            return deep
        if not isinstance(inputs, dict) or "ngram_ids" not in inputs:
            raise ValueError("with ngram_buckets the model takes a dict with ngram_ids")
        wide = self.ngram_logit(inputs["ngram_ids"])  # (B,): evidence for class 1; or (B, C)
        combined = self.combination(deep, wide)
        if not paths:
            return combined
        wide = evidence_logits(wide) if self.ngram_logit.classes == 2 else wide
        return ops.stack([combined, ops.cast(deep, "float32"), wide], axis=1)

    def path_logits(self, inputs, training=None):
        """(B, 3, C): the combination's, the deep path's and the wide path's logits (float32)."""
        return self(inputs, training=training, paths=True)


class PathTraining(keras.Model):
    """A WideAndDeep classifier as it trains with its wide path: the same layers and weights,
    answering `path_logits` (B, 3, C). `compute_loss` trains the deep path on its own loss (the
    wide one trains alone, before or after: training/wide_path.py) and `compute_metrics`
    reports `accuracy` of the combination, `deep_accuracy` and `wide_accuracy`. What is served
    is `classifier`, whose logits are the combination's."""

    def __init__(self, classifier: WideAndDeep, **kwargs):
        super().__init__(name=f"{classifier.name}_paths", **kwargs)
        self.classifier = classifier
        self.built = classifier.built
        self.path_accuracy = {
            path: keras.metrics.CategoricalAccuracy(name=f"{path}_accuracy")
            for path in ("deep", "wide")
        }

    def call(self, inputs, training=None):
        return self.classifier.path_logits(inputs, training=training)

    def build(self, input_shape):  # the classifier builds itself when first called
        pass

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        deep = None if y_pred is None else y_pred[:, 1]
        return super().compute_loss(x, y, deep, sample_weight, training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        for index, path in enumerate(("deep", "wide"), start=1):
            self.path_accuracy[path].update_state(y, y_pred[:, index], sample_weight)
        return super().compute_metrics(x, y, y_pred[:, 0], sample_weight)


def training_model(classifier: WideAndDeep) -> keras.Model:
    """What trains: `classifier` itself, or with the wide path its PathTraining."""
    return PathTraining(classifier) if classifier.ngram_logit is not None else classifier


def classifier_of(model: keras.Model):
    """The classifier a training model (training_model's) trains, the one to serve."""
    return model.classifier if isinstance(model, PathTraining) else model
