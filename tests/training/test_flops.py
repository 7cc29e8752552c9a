"""The FLOP count of a training step against a model counted by hand, and the share of a peak
that cannot pass 100%."""

import keras
import numpy as np
import pytest

from lab.flops import share_of_peak, training_flops

B, T, D, E, F = 8, 16, 64, 128, 32


def two_dense_layers_over_tokens():
    """(B, T, D) -> Dense E -> Dense F -> mean over T: matrix products only, but for biases,
    a mean and the optimizer's element-wise update."""
    model = keras.Sequential(
        [
            keras.Input((T, D)),
            keras.layers.Dense(E),
            keras.layers.Dense(F),
            keras.layers.GlobalAveragePooling1D(),
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    return model


def test_a_training_step_is_counted_as_its_matrix_products_by_hand():
    """First layer: forward and weight gradient (its input needs none), 2 x 2 B T D E. Second:
    forward, input and weight gradients, 3 x 2 B T E F. TensorFlow's profiler counts each
    weight gradient (a batched product with an adjoint flag) with the wrong contraction size,
    over four times this."""
    by_hand = 2 * 2 * B * T * D * E + 3 * 2 * B * T * E * F
    inputs = np.ones((B, T, D), "float32")
    counted = training_flops(two_dense_layers_over_tokens(), inputs, np.zeros((B, F), "float32"))
    parameters = D * E + E + E * F + F
    # Element-wise work beside the products: bias adds and gradients, the mean, the loss and
    # the update, a few operations per activation or parameter.
    assert by_hand <= counted <= by_hand + 10 * (B * T * (E + F) + parameters)


def test_a_share_of_the_peak_above_one_is_an_error_naming_both_figures():
    assert share_of_peak(0.3, 0.6) == pytest.approx(0.5)
    with pytest.raises(RuntimeError, match=r"0\.500 TFLOP/s, 134% of the measured peak 0\.373"):
        share_of_peak(0.5, 0.373)
