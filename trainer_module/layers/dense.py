"""Dense projections of token sequences, multiplied as one matrix (keras.ops only).

Keras 3 before 3.15 multiplies a (B, T, D) input by a (D, K) kernel with TensorFlow's
broadcasting batch matmul, whose kernel gradient is one (D, K) product per sequence, written
out and summed afterwards (keras-team/keras#22823, fixed in Keras 3.15): a cost of B x D x K
per layer and step whatever T is. Flattening to (B*T, D) first gives the same values and one
(D, K) gradient product; docs/benchmarks/systems.md#training-steps.
"""

import keras
from keras import ops


def flat_matmul(x, kernel):
    """x (..., D) @ kernel (D, K) -> (..., K), computed as one (N, D) @ (D, K) product."""
    if len(x.shape) <= 2:
        return ops.matmul(x, kernel)
    product = ops.matmul(ops.reshape(x, (-1, x.shape[-1])), kernel)
    return ops.reshape(product, unflattened(x, kernel.shape[-1]))


# The most rows that few_rows_matmul multiplies a row at a time: a sentence's beams at beam 4,
# the single request's decoding step.
FEW_ROWS = 4


def few_rows_matmul(x, kernel):
    """x (N, D) @ kernel (D, K) for a decoding step, whose N rows may be few: where 1 < N <=
    FEW_ROWS, as N one-row products (a batched (N, 1, D) @ (D, K)), under TensorFlow. Its CPU
    kernel multiplies a single row by a matrix in one pass over the matrix, but packs a large
    matrix into blocks for a product of a few rows: for the translator's (256, 9,600) output
    table, four rows a row at a time took about half the time of one product
    (docs/benchmarks/translation.md). The same values up to rounding (the order of a dot
    product's sums may differ). N may be known only when the graph runs (a search's batch
    shrinks as its sentences are decided)."""
    if keras.backend.backend() != "tensorflow":
        return ops.matmul(x, kernel)
    if x.shape[0] is not None:
        return row_by_row_matmul(x, kernel) if 1 < x.shape[0] <= FEW_ROWS else ops.matmul(x, kernel)
    rows = ops.shape(x)[0]
    return ops.cond(
        ops.logical_and(rows > 1, rows <= FEW_ROWS),
        lambda: row_by_row_matmul(x, kernel),
        lambda: ops.matmul(x, kernel),
    )


def row_by_row_matmul(x, kernel):
    """x (N, D) @ kernel (D, K) as N one-row products: a batched (N, 1, D) @ (D, K)."""
    return ops.squeeze(ops.matmul(ops.expand_dims(x, 1), kernel), 1)


def unflattened(x, units: int) -> tuple:
    """The shape of x (..., D) with `units` for D. Static where x's inner axes are (one
    decoding position: (-1, 1, units)), which spares a graph its shape computations."""
    inner = x.shape[1:-1]
    if all(size is not None for size in inner):
        return (-1, *inner, units)
    return (*ops.shape(x)[:-1], units)


@keras.saving.register_keras_serializable(package="trainer_module")
class Dense(keras.layers.Dense):
    """keras.layers.Dense whose inputs of rank > 2 are flattened to one matrix (flat_matmul):
    same weights, same outputs, a gradient that does not grow with the batch's sequences."""

    def call(self, inputs, training=None):
        if len(inputs.shape) <= 2:
            return super().call(inputs, training=training)
        flat = super().call(ops.reshape(inputs, (-1, inputs.shape[-1])), training=training)
        return ops.reshape(flat, unflattened(inputs, self.units))
