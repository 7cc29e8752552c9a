"""Loss and accuracy over token sequences, masked on padding (id 0) (keras.ops only)."""

import keras
from keras import ops

PAD_ID = 0


class MaskedSequenceCrossEntropy(keras.losses.Loss):
    """Label-smoothed cross-entropy from logits, averaged over real (non-padding) tokens.

    Per token: (1 - e) * -log p(y) + e * mean_k(-log p(k)) (Szegedy et al., 2016), without
    materialising a one-hot (B, T, V) tensor.
    """

    def __init__(self, label_smoothing: float = 0.0, name="masked_cross_entropy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.label_smoothing = label_smoothing

    def call(self, y_true, y_pred):
        labels = ops.cast(y_true, "int32")
        logits = ops.cast(y_pred, "float32")  # (B, T, V)
        # -log p(y) by the backend's fused sparse cross-entropy, whose gradient is softmax - 1[y]
        # (a gather's gradient scatters into a zero (B, T, V) tensor: a tenth of the
        # translator's step); -mean_k log p(k) = logsumexp - mean of the logits.
        nll = ops.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        smooth = ops.logsumexp(logits, axis=-1) - ops.mean(logits, axis=-1)
        per_token = (1.0 - self.label_smoothing) * nll + self.label_smoothing * smooth
        mask = ops.cast(ops.not_equal(labels, PAD_ID), "float32")
        return ops.sum(per_token * mask) / ops.maximum(ops.sum(mask), 1.0)

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}


class MaskedTokenAccuracy(keras.metrics.Metric):
    """Share of real (non-padding) target tokens whose argmax prediction is right."""

    def __init__(self, name="token_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        labels = ops.cast(y_true, "int32")
        mask = ops.not_equal(labels, PAD_ID)
        hits = ops.logical_and(
            ops.equal(ops.cast(ops.argmax(y_pred, axis=-1), "int32"), labels), mask
        )
        self.correct.assign_add(ops.sum(ops.cast(hits, "float32")))
        self.total.assign_add(ops.sum(ops.cast(mask, "float32")))

    def result(self):
        return self.correct / ops.maximum(self.total, 1.0)

    def reset_state(self):
        self.correct.assign(0.0)
        self.total.assign(0.0)
