import numpy as np
from keras import ops

from trainer_module.layers import MultiHeadAttention


def test_shapes_self_and_cross_attention():
    mha = MultiHeadAttention(num_heads=2, key_dim=4)
    out, weights = mha(ops.ones((3, 5, 8)))
    assert tuple(out.shape) == (3, 5, 8)
    assert tuple(weights.shape) == (3, 2, 5, 5)

    cross = MultiHeadAttention(num_heads=4, key_dim=2)
    out, weights = cross(
        np.random.rand(2, 3, 8).astype("float32"), np.random.rand(2, 7, 8).astype("float32")
    )
    assert tuple(out.shape) == (2, 3, 8)
    assert tuple(weights.shape) == (2, 4, 3, 7)


def test_padded_keys_get_zero_weight_and_rows_sum_to_one():
    mha = MultiHeadAttention(num_heads=2, key_dim=4)
    x = np.random.rand(2, 5, 8).astype("float32")
    padding = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=bool)
    _, weights = mha(x, attention_mask=padding[:, None, :])
    weights = ops.convert_to_numpy(weights)
    np.testing.assert_array_equal(weights[0, :, :, 3:], 0.0)
    assert (weights[1] > 0).all()
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)


def test_masked_keys_do_not_change_the_output():
    mha = MultiHeadAttention(num_heads=2, key_dim=4)
    x = np.random.rand(1, 4, 8).astype("float32")
    changed = x.copy()
    changed[0, 3] += 10.0  # only the masked key/value moves
    mask = np.array([[[True, True, True, False]]])
    out, _ = mha(x, attention_mask=mask)
    out_changed, _ = mha(changed, attention_mask=mask)
    np.testing.assert_allclose(
        ops.convert_to_numpy(out)[0, :3],
        ops.convert_to_numpy(out_changed)[0, :3],
        rtol=1e-5,
        atol=1e-6,
    )


def test_get_config_round_trip():
    mha = MultiHeadAttention(num_heads=3, key_dim=5, dropout=0.2)
    clone = MultiHeadAttention.from_config(mha.get_config())
    assert (clone.num_heads, clone.key_dim, clone.dropout) == (3, 5, 0.2)
