"""Dense projections of token sequences, multiplied as one matrix (keras.ops only).

Keras 3 before 3.15 multiplies a (B, T, D) input by a (D, K) kernel with TensorFlow's
broadcasting batch matmul, whose kernel gradient is one (D, K) product per sequence, written
out and summed afterwards (keras-team/keras#22823, fixed in Keras 3.15): a cost of B x D x K
per layer and step whatever T is. Flattening to (B*T, D) first gives the same values and one
(D, K) gradient product; docs/benchmarks.md#training-step.
"""

import keras
from keras import ops


def flat_matmul(x, kernel):
    """x (..., D) @ kernel (D, K) -> (..., K), computed as one (N, D) @ (D, K) product."""
    if len(x.shape) <= 2:
        return ops.matmul(x, kernel)
    leading = ops.shape(x)[:-1]
    product = ops.matmul(ops.reshape(x, (-1, x.shape[-1])), kernel)
    return ops.reshape(product, (*leading, kernel.shape[-1]))


@keras.saving.register_keras_serializable(package="trainer_module")
class Dense(keras.layers.Dense):
    """keras.layers.Dense whose inputs of rank > 2 are flattened to one matrix (flat_matmul):
    same weights, same outputs, a gradient that does not grow with the batch's sequences."""

    def call(self, inputs, training=None):
        if len(inputs.shape) <= 2:
            return super().call(inputs, training=training)
        leading = ops.shape(inputs)[:-1]
        flat = super().call(ops.reshape(inputs, (-1, inputs.shape[-1])), training=training)
        return ops.reshape(flat, (*leading, self.units))
