import keras
import numpy as np
import pytest
from keras import ops

from trainer_module.layers import TransformerEncoderBlock


def test_output_and_attention_shapes():
    block = TransformerEncoderBlock(num_heads=2, ff_dim=16, dropout=0.0)
    x, weights = block(np.random.rand(3, 6, 8).astype("float32"),
                       padding_mask=np.ones((3, 6), dtype=bool))
    assert tuple(x.shape) == (3, 6, 8)
    assert tuple(weights.shape) == (3, 2, 6, 6)


def test_padding_mask_reaches_attention():
    block = TransformerEncoderBlock(num_heads=2, ff_dim=16, dropout=0.0)
    mask = np.array([[True, True, False, False]])
    _, weights = block(np.random.rand(1, 4, 8).astype("float32"), padding_mask=mask)
    np.testing.assert_array_equal(ops.convert_to_numpy(weights)[..., 2:], 0.0)


def test_rejects_d_model_not_divisible_by_heads():
    with pytest.raises(ValueError, match="not divisible"):
        TransformerEncoderBlock(num_heads=3, ff_dim=8)(np.zeros((1, 2, 8), dtype="float32"))


@pytest.mark.parametrize("norm_first", [False, True])
def test_pre_and_post_norm_both_train_a_step(norm_first):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((5, 8))
    encoded, _ = TransformerEncoderBlock(num_heads=2, ff_dim=16, dropout=0.0,
                                         norm_first=norm_first)(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(encoded))
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse")
    x = np.random.rand(4, 5, 8).astype("float32")
    y = np.random.rand(4, 5, 1).astype("float32")
    before = [w.copy() for w in model.get_weights()]
    first = model.train_on_batch(x, y)
    for _ in range(20):
        last = model.train_on_batch(x, y)
    assert all(np.isfinite(w).all() for w in model.get_weights())
    assert any(not np.allclose(a, b) for a, b in zip(before, model.get_weights()))
    assert last < first
