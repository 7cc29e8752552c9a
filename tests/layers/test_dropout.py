import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from trainer_module.layers import Dropout


def test_inference_is_the_identity_and_training_zeroes_the_rate_and_scales_the_rest():
    layer = Dropout(0.3, seed=1)
    x = np.random.default_rng(0).normal(size=(8, 40, 257)).astype("float32")  # odd width
    assert np.array_equal(ops.convert_to_numpy(layer(x)), x)
    out = ops.convert_to_numpy(layer(x, training=True))
    dropped = out == 0
    assert abs(dropped.mean() - 0.3) < 0.01  # 82,240 draws: 0.3 within 6 standard deviations
    np.testing.assert_allclose(out[~dropped], x[~dropped] / 0.7, rtol=1e-6)
    # Each column of the last axis (the second half comes from the draws' other 16 bits) too.
    assert np.all(np.abs(dropped.mean(axis=(0, 1)) - 0.3) < 0.12)


def test_each_call_draws_a_new_mask_and_keeps_the_static_shape():
    layer = Dropout(0.5, seed=2)
    x = np.ones((4, 6, 32), dtype="float32")
    first, second = (ops.convert_to_numpy(layer(x, training=True)) for _ in range(2))
    assert not np.array_equal(first, second)

    @tf.function(input_signature=[tf.TensorSpec((None, None, 32))])
    def traced(inputs):
        out = layer(inputs, training=True)
        assert out.shape.as_list() == [None, None, 32]
        return out

    assert traced(x).shape == (4, 6, 32)


def test_the_gradient_is_the_mask():
    layer = Dropout(0.25, seed=3)
    x = tf.constant(np.random.default_rng(1).normal(size=(3, 5, 16)), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = layer(x, training=True)
    gradient = tape.gradient(out, x).numpy()
    kept = out.numpy() != 0
    np.testing.assert_allclose(gradient, np.where(kept, 1 / 0.75, 0.0), rtol=1e-6)


def test_under_mixed_bfloat16_the_mask_is_bfloat16():
    out = Dropout(0.1, seed=4, dtype="mixed_bfloat16")(tf.ones((2, 3, 8)), training=True)
    assert out.dtype == tf.bfloat16
    assert set(np.unique(tf.cast(out, tf.float32).numpy())) <= {
        0.0,
        np.float32(tf.bfloat16.as_numpy_dtype(1 / 0.9)),
    }


def test_a_rate_of_one_is_refused():
    with pytest.raises(ValueError, match="rate"):
        Dropout(1.0)
