import math

import numpy as np
from keras import ops

from trainer_module.layers import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    TokenEmbedding,
    sinusoidal_table,
)


def test_sinusoidal_values_at_known_positions():
    table = sinusoidal_table(max_length=50, d_model=8)
    assert table.shape == (50, 8)
    np.testing.assert_allclose(table[0], [0, 1, 0, 1, 0, 1, 0, 1], atol=1e-7)
    # PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d))
    assert math.isclose(table[1, 0], math.sin(1.0), rel_tol=1e-6)
    assert math.isclose(table[1, 1], math.cos(1.0), rel_tol=1e-6)
    assert math.isclose(table[7, 2], math.sin(7 / 10000 ** (2 / 8)), rel_tol=1e-6)
    assert math.isclose(table[42, 7], math.cos(42 / 10000 ** (6 / 8)), rel_tol=1e-5)


def test_sinusoidal_layer_adds_the_table_prefix():
    layer = SinusoidalPositionalEncoding(max_length=10)
    x = np.zeros((2, 4, 6), dtype="float32")
    np.testing.assert_allclose(
        ops.convert_to_numpy(layer(x))[1], sinusoidal_table(10, 6)[:4], atol=1e-6
    )


def test_learned_positions_are_trainable_and_sliced():
    layer = LearnedPositionalEmbedding(max_length=10)
    out = layer(np.zeros((2, 3, 4), dtype="float32"))
    assert tuple(out.shape) == (2, 3, 4)
    assert [tuple(w.shape) for w in layer.trainable_weights] == [(10, 4)]


def test_token_embedding_is_scaled_by_sqrt_d_model():
    scaled, plain = TokenEmbedding(10, 16), TokenEmbedding(10, 16, scale=False)
    ids = np.array([[1, 2, 0]])
    plain(ids)
    scaled(ids)
    scaled.embedding.set_weights(plain.embedding.get_weights())
    np.testing.assert_allclose(
        ops.convert_to_numpy(scaled(ids)), ops.convert_to_numpy(plain(ids)) * 4.0, rtol=1e-6
    )


def test_token_dropout_blanks_whole_tokens_in_training_only():
    from trainer_module.layers import TokenDropout

    layer = TokenDropout(0.5, seed=1)
    x = np.ones((4, 50, 8), dtype="float32")
    assert np.array_equal(ops.convert_to_numpy(layer(x)), x)  # inference: untouched
    out = ops.convert_to_numpy(layer(x, training=True))
    blanked = (out == 0).all(axis=-1)
    assert ((out == 0) | (out == 1)).all() and (blanked == (out == 0).any(axis=-1)).all()
    assert 0.3 < blanked.mean() < 0.7  # about half the tokens, each whole
