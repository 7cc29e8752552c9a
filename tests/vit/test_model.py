import keras
import numpy as np
import pytest
from keras import ops

from trainer_module.vit import FAMILY
from trainer_module.vit.config import VitConfig
from trainer_module.vit.model import VitClassifier, build_model, whitening_kernel

get_preset = FAMILY.config


def test_patch_tokenizer_makes_one_token_per_patch_plus_cls():
    config = get_preset("tiny", {"image_size": 16, "patch_size": 4, "num_layers": 2})
    model = VitClassifier(config)
    images = np.random.default_rng(0).normal(size=(3, 16, 16, 3)).astype("float32")
    assert config.num_patches == 16
    assert tuple(model.tokenize(images).shape) == (3, 16, config.d_model)
    hidden, attention = model.encode(images)
    assert tuple(hidden.shape) == (3, 17, config.d_model)  # [CLS] + 16 patches
    assert [tuple(w.shape) for w in attention] == [(3, config.num_heads, 17, 17)] * 2
    np.testing.assert_allclose(ops.sum(attention[0], axis=-1), 1.0, atol=1e-5)
    assert tuple(model(images).shape) == (3, 10)


def test_patch_tokens_are_row_major_and_see_only_their_own_patch():
    model = VitClassifier(get_preset("tiny"))
    images = np.zeros((1, 16, 16, 3), "float32")
    base = model.tokenize(images)
    images[0, 4:8, 8:12] = 1.0  # the patch in row 1, column 2 of the 4x4 grid
    changed = np.abs(np.asarray(model.tokenize(images)) - np.asarray(base)).sum(-1)[0]
    assert list(np.nonzero(changed)[0]) == [1 * 4 + 2]


def test_conv_tokenizer_grid_and_sequence_pooling():
    config = VitConfig(
        tokenizer="conv",
        conv_layers=2,
        conv_filters=8,
        d_model=16,
        num_heads=2,
        mlp_dim=16,
        num_layers=1,
        pooling="sequence",
    )
    model = VitClassifier(config)
    images = np.ones((2, 32, 32, 3), "float32")
    assert config.grid_size == 8
    hidden, attention = model.encode(images)
    assert tuple(hidden.shape) == (2, 64, 16)  # no [CLS] token with sequence pooling
    assert tuple(attention[0].shape) == (2, 2, 64, 64)
    assert tuple(model(images).shape) == (2, 10)


@pytest.mark.parametrize("stages, grid", [(2, 8), (3, 4)])
def test_hybrid_stem_gives_one_token_per_cell_of_its_feature_map(stages, grid):
    """Each stage halves the 32x32 grid (its second convolution has stride 2)."""
    config = get_preset(
        "base",
        {"tokenizer": "hybrid", "conv_layers": stages, "conv_filters": 8, "d_model": 24}
        | {"num_heads": 3, "num_layers": 1, "pooling": "sequence"},
    )
    model = VitClassifier(config)
    images = np.random.default_rng(0).normal(size=(2, 32, 32, 3)).astype("float32")
    assert config.grid_size == grid
    assert tuple(model.tokenize(images).shape) == (2, grid * grid, 24)
    channels = [layer.filters for layer in model.tokenizer_layers if hasattr(layer, "filters")]
    assert channels == [8, 8, 16, 16, 32, 32][: 2 * (stages - 1)] + [24, 24]
    hidden, attention = model.encode(images)
    assert tuple(hidden.shape) == (2, grid * grid, 24)  # sequence pooling: no [CLS]
    assert tuple(attention[0].shape) == (2, config.num_heads, grid * grid, grid * grid)


@pytest.mark.parametrize("whitening, grid", [(0, 4), (2, 3)])
def test_pooled_stem_is_airbenchs_blocks_and_gives_one_token_per_cell(whitening, grid):
    """Each stage is conv, 2x2 max-pool, norm, GELU, conv, norm, GELU; the unpadded 2x2
    whitening convolution makes the grid 31 -> 15 -> 7 -> 3 (flooring), 32 -> 16 -> 8 -> 4
    without it."""
    config = get_preset(
        "hybrid_airbench",
        {"stem_pooling": True, "whitening_kernel": whitening, "conv_filters": 8, "d_model": 24}
        | {"num_heads": 2, "mlp_dim": 16, "num_layers": 1},
    )
    model = VitClassifier(config)
    images = np.random.default_rng(0).normal(size=(2, 32, 32, 3)).astype("float32")
    assert config.grid_size == grid
    assert tuple(model.tokenize(images).shape) == (2, grid * grid, 24)
    kinds = [type(layer).__name__ for layer in model.tokenizer_layers]
    stage = ["Conv2D", "MaxPooling2D", "BatchNormalization", "Activation"]
    stage += ["Conv2D", "BatchNormalization", "Activation"]
    assert kinds == ["Conv2D", "Activation"] * bool(whitening) + stage * 3
    channels = [layer.filters for layer in model.tokenizer_layers if hasattr(layer, "filters")]
    assert channels == [24] * bool(whitening) + [8, 8, 16, 16, 24, 24]


def correlated_images(count: int, seed: int = 0) -> np.ndarray:
    """Smooth images whose channels share most of their signal, as photographs' do."""
    rng = np.random.default_rng(seed)
    gray = rng.normal(size=(count, 16, 16, 1)).cumsum(axis=1).cumsum(axis=2) / 16
    return (gray + 0.2 * rng.normal(size=(count, 16, 16, 3))).astype("float32")


def test_whitening_kernel_decorrelates_its_samples_patches_to_unit_variance():
    images = correlated_images(64)
    kernel = whitening_kernel(images, 2, eps=0.0)
    assert kernel.shape == (2, 2, 3, 24)
    np.testing.assert_array_equal(kernel[..., 12:], -kernel[..., :12])
    outputs = ops.convert_to_numpy(ops.conv(images, kernel, padding="valid")).reshape(-1, 24)
    second_moment = outputs[:, :12].T @ outputs[:, :12] / len(outputs)
    np.testing.assert_allclose(second_moment, np.eye(12), atol=1e-3)
    raw = images[:, 8:10, 8:10].reshape(64, -1)  # raw patches: channels far from that
    assert np.abs(np.corrcoef(raw.T)[0, 1]) > 0.5


@pytest.mark.slow
@pytest.mark.parametrize("pooling, first", [(False, "stem_0a"), (True, "whitening")])
def test_the_whitened_stem_stays_frozen_while_the_rest_trains(pooling, first):
    config = get_preset(
        "base",
        {"tokenizer": "hybrid", "label_smoothing": 0.2, "pooling": "sequence"}
        | {"image_size": 16, "conv_layers": 2, "conv_filters": 8, "d_model": 16, "num_layers": 1}
        | {"num_heads": 2, "mlp_dim": 16, "whitening_kernel": 2, "batch_size": 8}
        | {"stem_pooling": pooling},
    )
    model = build_model(config, train_steps=2)
    images, labels = correlated_images(8), np.eye(10)[np.arange(8)]
    model.whiten(images)
    stem = model.tokenizer_layers[0]
    assert stem.name == first and stem.filters == 24 and not stem.trainable
    whitened = whitening_kernel(images, 2)
    np.testing.assert_allclose(ops.convert_to_numpy(stem.kernel), whitened, atol=1e-6)
    before = [ops.convert_to_numpy(w) for w in model.trainable_weights]
    model.fit(images, labels, batch_size=8, epochs=2, verbose=0)
    np.testing.assert_allclose(ops.convert_to_numpy(stem.kernel), whitened, atol=1e-6)
    after = [ops.convert_to_numpy(w) for w in model.trainable_weights]
    assert all(not np.allclose(b, a) for b, a in zip(before, after) if b.ndim > 1)


def test_flip_test_time_averages_the_logits_of_the_image_and_its_mirror():
    config = get_preset("tiny", {"flip_test_time": True, "num_layers": 2})
    model = VitClassifier(config)
    images = np.random.default_rng(1).normal(size=(3, 16, 16, 3)).astype("float32")

    def single_pass(x):
        return ops.convert_to_numpy(model.head(model.pool(model.encode(x)[0])))

    expected = (single_pass(images) + single_pass(images[:, :, ::-1])) / 2
    np.testing.assert_allclose(ops.convert_to_numpy(model(images)), expected, atol=1e-5)
    # Training sees one pass of the (already augmented) batch.
    np.testing.assert_allclose(
        ops.convert_to_numpy(model(images, training=True)), single_pass(images), atol=1e-5
    )
    assert not np.allclose(expected, single_pass(images), atol=1e-3)  # the mirror mattered


def test_translate_test_time_adds_one_pixel_shifts_weighted_as_airbench():
    config = get_preset(
        "tiny", {"flip_test_time": True, "translate_test_time": True, "num_layers": 1}
    )
    model = VitClassifier(config)
    images = np.random.default_rng(2).normal(size=(2, 16, 16, 3)).astype("float32")

    def single_pass(x):
        return ops.convert_to_numpy(model.head(model.pool(model.encode(x)[0])))

    def shifts(x):  # reflect-padded by one pixel: up-left and down-right crops
        padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), mode="reflect")
        return [padded[:, :16, :16], padded[:, 2:, 2:]]

    mirror = images[:, :, ::-1]
    np.testing.assert_array_equal(shifts(images)[1][:, :15, :15], images[:, 1:, 1:])
    unshifted = (single_pass(images) + single_pass(mirror)) / 2
    shifted = sum(single_pass(x) for x in shifts(images) + shifts(mirror)) / 4
    expected = (unshifted + shifted) / 2
    np.testing.assert_allclose(ops.convert_to_numpy(model(images)), expected, atol=1e-5)
    assert not np.allclose(expected, unshifted, atol=1e-4)  # the shifts mattered


@pytest.mark.slow
def test_sgd_recipe_scales_norm_offsets_and_the_encoder_and_leaves_norms_without_a_scale():
    config = get_preset(
        "tiny",
        {
            "tokenizer": "hybrid",
            "conv_layers": 2,
            "stem_pooling": True,
            "optimizer": "sgd",
            "norm_bias_scaler": 64.0,
            "encoder_lr_scale": 0.1,
            "norm_scale": False,
            "norm_momentum": 0.6,
        },
    )
    model = build_model(config, train_steps=10)
    norms = [x for x in model.tokenizer_layers if isinstance(x, keras.layers.BatchNormalization)]
    assert len(norms) == 4 and all(not n.scale and n.momentum == 0.6 for n in norms)
    assert model.optimizer.nesterov
    stem = {v.path for layer in model.tokenizer_layers for v in layer.trainable_variables}
    after_the_stem = {v.path for v in model.trainable_variables} - stem
    assert after_the_stem and model.optimizer.scales == {
        **{n.beta.path: 64.0 for n in norms},
        **dict.fromkeys(after_the_stem, 0.1),
    }  # the stem's convolutions keep the learning rate itself
    images = np.random.default_rng(0).normal(size=(8, 16, 16, 3)).astype("float32")
    model.fit(images, np.eye(10, dtype="float32")[np.arange(8)], epochs=1, verbose=0)


@pytest.mark.parametrize("wide, widths", [(False, [8, 16, 32]), (True, [8, 32, 32])])
def test_wide_stem_gives_every_stage_after_the_first_d_model_filters(wide, widths):
    config = get_preset(
        "tiny",
        {
            "tokenizer": "hybrid",
            "conv_layers": 3,
            "conv_filters": 8,
            "d_model": 32,
            "stem_pooling": True,
            "wide_stem": wide,
        },
    )
    model = VitClassifier(config)
    convs = [x for x in model.tokenizer_layers if isinstance(x, keras.layers.Conv2D)]
    assert [c.filters for c in convs] == [w for w in widths for _ in "ab"]
    assert tuple(model(ops.zeros((2, 16, 16, 3))).shape) == (2, 10)


def test_cls_token_sits_at_position_zero():
    # No blocks: the output is LayerNorm(token + position). Zero images and zero-initialised
    # patch biases leave the patch tokens at their position embeddings; [CLS] is at row 0.
    model = VitClassifier(get_preset("tiny", {"num_layers": 0}))
    images = np.zeros((1, 16, 16, 3), "float32")
    model(images)
    cls = np.arange(16, dtype="float32").reshape(1, 1, 16)
    model.cls_token.assign(cls)
    positions = np.asarray(model.position_embedding.table)
    hidden, _ = model.encode(images)
    expected = np.asarray(model.encoder.final_norm(ops.convert_to_tensor(cls[0] + positions[:1])))
    np.testing.assert_allclose(np.asarray(hidden)[0, :1], expected, atol=1e-5)
    np.testing.assert_allclose(np.asarray(model.pool(hidden)), expected, atol=1e-5)
    patches = np.asarray(model.encoder.final_norm(ops.convert_to_tensor(positions[1:])))
    np.testing.assert_allclose(np.asarray(hidden)[0, 1:], patches, atol=1e-5)


def test_tiny_model_overfits_a_few_images():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    images = rng.normal(size=(8, 16, 16, 3)).astype("float32")
    labels = np.arange(8) % 4
    model = VitClassifier(get_preset("tiny", {"num_classes": 4, "d_model": 32, "mlp_dim": 64}))
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    for _ in range(150):
        model.train_on_batch(images, labels)
    assert list(np.argmax(ops.convert_to_numpy(model(images)), -1)) == list(labels)


def test_config_round_trip_rebuilds_the_same_model():
    model = VitClassifier(get_preset("tiny", {"pooling": "sequence", "num_layers": 2}))
    images = np.ones((1, 16, 16, 3), "float32")
    clone = VitClassifier.from_config(model.get_config())
    assert clone.config == model.config
    model(images)
    clone(images)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(
        ops.convert_to_numpy(clone(images)), ops.convert_to_numpy(model(images)), rtol=1e-6
    )


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"tokenizer": "pixels"}, "tokenizer must be"),
        ({"pooling": "max"}, "pooling must be"),
        ({"patch_size": 5}, "not a multiple of patch_size"),
        ({"num_heads": 3}, "divisible"),
        ({"whitening_kernel": 2}, "needs tokenizer='hybrid'"),
        ({"stem_pooling": True}, "stem_pooling needs tokenizer='hybrid'"),
        ({"depth": 3}, "unknown VitConfig fields"),
        ({"optimizer": "lamb"}, "optimizer must be"),
        ({"norm_bias_scaler": 64.0}, "norm_bias_scaler needs optimizer='sgd'"),
        ({"encoder_lr_scale": 0.1}, "encoder_lr_scale needs optimizer='sgd'"),
        ({"wide_stem": True}, "wide_stem needs tokenizer='hybrid'"),
        ({"translate_test_time": True}, "translate_test_time needs flip_test_time"),
        ({}, "unknown vit preset 'huge'"),
    ],
)
def test_bad_configs_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        get_preset("huge" if not overrides else "tiny", overrides)
