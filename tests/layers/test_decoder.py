import numpy as np
import pytest
from keras import ops

from trainer_module.layers import TransformerDecoderBlock, causal_mask


def test_causal_mask_is_lower_triangular():
    mask = ops.convert_to_numpy(causal_mask(4))
    assert mask.shape == (1, 4, 4)
    np.testing.assert_array_equal(mask[0], np.tril(np.ones((4, 4), dtype=bool)))


@pytest.mark.parametrize("norm_first", [False, True])
def test_shapes_and_no_position_sees_the_future(norm_first):
    rng = np.random.default_rng(0)
    block = TransformerDecoderBlock(num_heads=2, ff_dim=16, dropout=0.0, norm_first=norm_first)
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    memory = rng.normal(size=(2, 3, 8)).astype("float32")
    out, self_weights, cross_weights = block(x, memory)
    assert tuple(out.shape) == (2, 5, 8)
    assert tuple(self_weights.shape) == (2, 2, 5, 5)
    assert tuple(cross_weights.shape) == (2, 2, 5, 3)
    np.testing.assert_array_equal(np.triu(ops.convert_to_numpy(self_weights)[0, 0], k=1), 0.0)

    # Change the token at position 3: outputs at positions 0-2 must not move, 3 must.
    changed = x.copy()
    changed[:, 3] += 5.0
    out_changed, _, _ = block(changed, memory)
    before, after = ops.convert_to_numpy(out), ops.convert_to_numpy(out_changed)
    np.testing.assert_allclose(after[:, :3], before[:, :3], rtol=1e-5, atol=1e-6)
    assert not np.allclose(after[:, 3], before[:, 3])


def test_cross_attention_ignores_padded_source_positions():
    rng = np.random.default_rng(1)
    block = TransformerDecoderBlock(num_heads=2, ff_dim=16, dropout=0.0)
    x = rng.normal(size=(1, 4, 8)).astype("float32")
    memory = rng.normal(size=(1, 5, 8)).astype("float32")
    source_mask = np.array([[True, True, True, False, False]])
    out, _, cross_weights = block(x, memory, memory_mask=source_mask)
    np.testing.assert_array_equal(ops.convert_to_numpy(cross_weights)[..., 3:], 0.0)
    # Whatever sits in the padded memory positions does not change the output.
    noisy = memory.copy()
    noisy[:, 3:] = rng.normal(size=(1, 2, 8)) * 100
    out_noisy, _, _ = block(x, noisy, memory_mask=source_mask)
    np.testing.assert_allclose(ops.convert_to_numpy(out_noisy), ops.convert_to_numpy(out),
                               rtol=1e-5, atol=1e-6)
