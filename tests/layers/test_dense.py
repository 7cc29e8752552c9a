import keras
import numpy as np
import tensorflow as tf
from keras import ops

from trainer_module.layers import Dense, few_rows_matmul, flat_matmul
from trainer_module.layers.dense import FEW_ROWS


def _pair(units, input_dim, **kwargs):
    """Keras's Dense and the project's, with the same weights."""
    reference, flat = keras.layers.Dense(units, **kwargs), Dense(units, **kwargs)
    reference.build((None, input_dim))
    flat.build((None, input_dim))
    flat.set_weights(reference.get_weights())
    return reference, flat


def test_outputs_equal_keras_dense_at_every_rank():
    reference, flat = _pair(6, 5, activation="gelu")
    rng = np.random.default_rng(0)
    for shape in [(4, 5), (3, 7, 5), (2, 3, 4, 5)]:
        x = rng.normal(size=shape).astype("float32")
        out = ops.convert_to_numpy(flat(x))
        assert out.shape == shape[:-1] + (6,)
        np.testing.assert_allclose(out, ops.convert_to_numpy(reference(x)), rtol=1e-5, atol=1e-6)


def test_gradients_equal_keras_dense_with_unknown_batch_and_length():
    reference, flat = _pair(6, 5)
    x = np.random.default_rng(1).normal(size=(3, 7, 5)).astype("float32")
    signature = [tf.TensorSpec((None, None, 5), tf.float32)]

    def gradients(layer):
        @tf.function(input_signature=signature)
        def step(inputs):
            with tf.GradientTape() as tape:
                tape.watch(inputs)
                loss = tf.reduce_sum(tf.sin(layer(inputs)))
            return tape.gradient(loss, [inputs, layer.kernel, layer.bias])

        return [g.numpy() for g in step(x)]

    for got, want in zip(gradients(flat), gradients(reference)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_kernel_gradient_is_one_matrix_product_not_one_per_sequence():
    """Keras 3 < 3.15 on TensorFlow: a (B, T, D) input times a (D, K) kernel is a broadcasting
    BatchMatMulV2, whose kernel gradient is B products summed afterwards (keras#22823)."""

    def op_types(layer):
        layer.build((None, None, 8))

        @tf.function(input_signature=[tf.TensorSpec((None, None, 8), tf.float32)])
        def step(inputs):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(layer(inputs))
            return tape.gradient(loss, layer.kernel)

        graph = step.get_concrete_function().graph
        return {op.type for op in graph.get_operations()}

    assert "BatchMatMulV2" in op_types(keras.layers.Dense(4))  # what the layer exists for
    types = op_types(Dense(4))
    assert "BatchMatMulV2" not in types and "MatMul" in types


def test_flat_matmul_equals_matmul():
    rng = np.random.default_rng(2)
    x, kernel = rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 5))
    np.testing.assert_allclose(
        ops.convert_to_numpy(flat_matmul(x, kernel)), x @ kernel, rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(
        ops.convert_to_numpy(flat_matmul(x[0], kernel)), x[0] @ kernel, rtol=1e-6, atol=1e-6
    )


def test_static_inner_axes_need_no_shape_computation():
    """One decoding position, (B, 1, D) with B unknown: the output's shape is written as
    (-1, 1, K), with no Shape op in the graph; an unknown length still computes it."""
    _, flat = _pair(6, 5)
    kernel = flat.kernel

    def ops_of(spec, function):
        graph = tf.function(function, input_signature=[spec]).get_concrete_function().graph
        return [op.type for op in graph.get_operations()]

    for function in (flat, lambda x: flat_matmul(x, kernel)):
        position = ops_of(tf.TensorSpec([None, 1, 5]), function)
        assert "MatMul" in position and "Shape" not in position
        assert "Shape" in ops_of(tf.TensorSpec([None, None, 5]), function)
    x = np.ones((3, 1, 5), "float32")
    assert tuple(flat(x).shape) == (3, 1, 6)


def test_few_rows_matmul_equals_matmul_for_known_and_unknown_row_counts():
    rng = np.random.default_rng(3)
    kernel = tf.constant(rng.normal(size=(16, 40)), tf.float32)
    unknown = tf.function(
        lambda x: few_rows_matmul(x, kernel), input_signature=[tf.TensorSpec([None, 16])]
    )
    for rows in range(1, 2 * FEW_ROWS + 1):
        x = tf.constant(rng.normal(size=(rows, 16)), tf.float32)
        want = x.numpy() @ kernel.numpy()
        for got in (few_rows_matmul(x, kernel), unknown(x)):
            assert tuple(got.shape) == (rows, 40)
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_few_rows_are_multiplied_a_row_at_a_time_and_more_at_once():
    """A known count picks one product in the graph; an unknown one decides when it runs."""
    kernel = tf.ones((16, 40))

    def op_types(rows):
        graph = (
            tf.function(lambda x: few_rows_matmul(x, kernel))
            .get_concrete_function(tf.TensorSpec([rows, 16]))
            .graph
        )
        return {op.type for op in graph.get_operations()}

    for rows in (2, FEW_ROWS):
        assert "BatchMatMulV2" in op_types(rows) and "MatMul" not in op_types(rows)
    for rows in (1, FEW_ROWS + 1):  # one row is already multiplied in one pass
        assert "MatMul" in op_types(rows) and "BatchMatMulV2" not in op_types(rows)
    assert "If" in op_types(None) or "StatelessIf" in op_types(None)
