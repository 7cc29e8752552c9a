import keras
import numpy as np
import pytest
from keras import ops

from trainer_module.layers import EncoderStack, TransformerBlock, causal_mask, position_layer


def test_encoder_block_output_and_attention_shapes():
    block = TransformerBlock(num_heads=2, ff_dim=16, dropout=0.0)
    outputs = block(
        np.random.rand(3, 6, 8).astype("float32"), padding_mask=np.ones((3, 6), dtype=bool)
    )
    assert len(outputs) == 2  # no cross-attention weights without cross_attention
    x, weights = outputs
    assert tuple(x.shape) == (3, 6, 8)
    assert tuple(weights.shape) == (3, 2, 6, 6)


def test_padding_mask_reaches_attention():
    block = TransformerBlock(num_heads=2, ff_dim=16, dropout=0.0)
    mask = np.array([[True, True, False, False]])
    _, weights = block(np.random.rand(1, 4, 8).astype("float32"), padding_mask=mask)
    np.testing.assert_array_equal(ops.convert_to_numpy(weights)[..., 2:], 0.0)


def test_rejects_d_model_not_divisible_by_heads():
    with pytest.raises(ValueError, match="not divisible"):
        TransformerBlock(num_heads=3, ff_dim=8)(np.zeros((1, 2, 8), dtype="float32"))


@pytest.mark.parametrize("norm_first", [False, True])
def test_pre_and_post_norm_both_train_a_step(norm_first):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((5, 8))
    encoded, _ = TransformerBlock(num_heads=2, ff_dim=16, dropout=0.0, norm_first=norm_first)(
        inputs
    )
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


def test_causal_mask_is_lower_triangular():
    mask = ops.convert_to_numpy(causal_mask(4))
    assert mask.shape == (1, 4, 4)
    np.testing.assert_array_equal(mask[0], np.tril(np.ones((4, 4), dtype=bool)))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_block_shapes_and_no_position_sees_the_future(norm_first):
    rng = np.random.default_rng(0)
    block = TransformerBlock(
        num_heads=2,
        ff_dim=16,
        dropout=0.0,
        norm_first=norm_first,
        causal=True,
        cross_attention=True,
    )
    x = rng.normal(size=(2, 5, 8)).astype("float32")
    memory = rng.normal(size=(2, 3, 8)).astype("float32")
    out, self_weights, cross_weights = block(x, memory=memory)
    assert tuple(out.shape) == (2, 5, 8)
    assert tuple(self_weights.shape) == (2, 2, 5, 5)
    assert tuple(cross_weights.shape) == (2, 2, 5, 3)
    np.testing.assert_array_equal(np.triu(ops.convert_to_numpy(self_weights)[0, 0], k=1), 0.0)

    # Change the token at position 3: outputs at positions 0-2 must not move, 3 must.
    changed = x.copy()
    changed[:, 3] += 5.0
    out_changed, _, _ = block(changed, memory=memory)
    before, after = ops.convert_to_numpy(out), ops.convert_to_numpy(out_changed)
    np.testing.assert_allclose(after[:, :3], before[:, :3], rtol=1e-5, atol=1e-6)
    assert not np.allclose(after[:, 3], before[:, 3])


def test_cross_attention_ignores_padded_source_positions():
    rng = np.random.default_rng(1)
    block = TransformerBlock(num_heads=2, ff_dim=16, dropout=0.0, causal=True, cross_attention=True)
    x = rng.normal(size=(1, 4, 8)).astype("float32")
    memory = rng.normal(size=(1, 5, 8)).astype("float32")
    source_mask = np.array([[True, True, True, False, False]])
    out, _, cross_weights = block(x, memory=memory, memory_mask=source_mask)
    np.testing.assert_array_equal(ops.convert_to_numpy(cross_weights)[..., 3:], 0.0)
    # Whatever sits in the padded memory positions does not change the output.
    noisy = memory.copy()
    noisy[:, 3:] = rng.normal(size=(1, 2, 8)) * 100
    out_noisy, _, _ = block(x, memory=noisy, memory_mask=source_mask)
    np.testing.assert_allclose(
        ops.convert_to_numpy(out_noisy), ops.convert_to_numpy(out), rtol=1e-5, atol=1e-6
    )


def test_get_config_round_trip_keeps_the_kind_of_block():
    block = TransformerBlock(
        num_heads=2,
        ff_dim=16,
        causal=True,
        cross_attention=True,
        norm_first=True,
        activation="gelu",
    )
    clone = TransformerBlock.from_config(block.get_config())
    assert clone.get_config() == block.get_config()
    assert (clone.causal, clone.cross_attention) == (True, True)


def test_position_layer_refuses_an_unknown_kind():
    assert type(position_layer("learned", 4, "p")).__name__ == "LearnedPositionalEmbedding"
    with pytest.raises(ValueError, match="positional must be one of"):
        position_layer("rotary", 4, "p")


@pytest.mark.parametrize("norm_first", [False, True])
def test_the_encoder_stack_is_its_blocks_in_order_then_a_pre_norm_stacks_final_norm(norm_first):
    stack = EncoderStack(2, num_heads=2, ff_dim=16, dropout=0.0, norm_first=norm_first)
    x = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32"))
    padding_mask = ops.convert_to_tensor([[True] * 5, [True, True, True, False, False]])
    out, weights = stack(x, padding_mask=padding_mask)
    assert [block.name for block in stack.blocks] == ["encoder_0", "encoder_1"]
    assert (stack.final_norm is not None) == norm_first
    expected = x
    for block in stack.blocks:
        expected, _ = block(expected, padding_mask=padding_mask)
    if norm_first:
        expected = stack.final_norm(expected)
    np.testing.assert_allclose(ops.convert_to_numpy(out), ops.convert_to_numpy(expected), atol=1e-6)
    # Every block masks the padded keys of the second sequence.
    assert len(weights) == 2
    for w in weights:
        np.testing.assert_array_equal(ops.convert_to_numpy(w)[1, :, :, 3:], 0.0)
