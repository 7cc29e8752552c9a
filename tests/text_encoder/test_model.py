import keras
import numpy as np
import pytest
from keras import ops

from trainer_module.layers.ngram import PathTraining
from trainer_module.text_encoder.config import PRESETS, TextEncoderConfig
from trainer_module.text_encoder.model import TextEncoderClassifier, build_model, example_inputs


def tiny(**overrides) -> TextEncoderClassifier:
    config = TextEncoderConfig(
        vocab_size=10,
        max_length=6,
        truncation_head=6,
        d_model=8,
        num_heads=2,
        ff_dim=16,
        num_layers=2,
        dropout=0.0,
        ngram_buckets=0,
    )
    return TextEncoderClassifier(config.replace(**overrides))


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_logits_hidden_and_attention_shapes(pooling):
    model = tiny(pooling=pooling)
    ids = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6]])
    assert tuple(model(ids).shape) == (2, 2)
    hidden, mask, attention = model.encode(ids)
    extra = 1 if pooling == "cls" else 0
    assert tuple(hidden.shape) == (2, 6 + extra, 8)
    assert ops.convert_to_numpy(mask)[0].tolist() == [True] * extra + [True] * 3 + [False] * 3
    assert [tuple(w.shape) for w in attention] == [(2, 2, 6 + extra, 6 + extra)] * 2
    # Padding, the 10 words and the out-of-vocabulary bucket.
    assert model.token_embedding.embedding.input_dim == 12


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_padding_ids_do_not_change_predictions(pooling):
    model = tiny(pooling=pooling, positional="learned")
    short = np.array([[3, 4, 5, 0, 0, 0]])
    longer_padding = np.array([[3, 4, 5, 0, 0, 0, 0, 0]])
    model_long = tiny(pooling=pooling, positional="learned", max_length=8, truncation_head=8)
    model_long(longer_padding)
    model(short)
    model_long.set_weights(
        [
            w if w.shape == lw.shape else lw
            for w, lw in zip(model.get_weights(), model_long.get_weights())
        ]
    )
    # Positions beyond 6 only ever see padding: copy the shared prefix of the table.
    for w, lw in zip(model.weights, model_long.weights):
        if tuple(w.shape) != tuple(lw.shape):
            table = ops.convert_to_numpy(lw)
            table[: w.shape[0]] = ops.convert_to_numpy(w)
            lw.assign(table)
    np.testing.assert_allclose(
        ops.convert_to_numpy(model(short)),
        ops.convert_to_numpy(model_long(longer_padding)),
        rtol=1e-5,
        atol=1e-5,
    )


def test_get_config_round_trip_rebuilds_the_same_model():
    model = tiny(pooling="cls", norm_first=True, positional="learned", attention_dropout=0.1)
    ids = np.array([[3, 4, 5, 0, 0, 0]])
    model(ids)
    clone = TextEncoderClassifier.from_config(model.get_config())
    assert clone.config == model.config
    clone(ids)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(
        ops.convert_to_numpy(clone(ids)), ops.convert_to_numpy(model(ids)), rtol=1e-6
    )


def test_presets_build_and_reject_unknown_fields():
    from trainer_module.text_encoder import FAMILY

    config = FAMILY.config("tiny", {"num_layers": 3})
    assert config.num_layers == 3 and PRESETS["tiny"].num_layers == 1
    model = TextEncoderClassifier(config.replace(vocab_size=20))
    assert tuple(model(example_inputs(config, batch_size=2)).shape) == (2, 2)
    with pytest.raises(ValueError, match="unknown TextEncoderConfig fields"):
        FAMILY.config("tiny", {"n_layers": 3})
    with pytest.raises(ValueError, match="unknown text_encoder preset 'huge'"):
        FAMILY.config("huge")
    with pytest.raises(ValueError, match="divisible"):
        FAMILY.config("tiny", {"num_heads": 3})
    with pytest.raises(ValueError, match="truncation_head=40 must be between 0 and"):
        FAMILY.config("tiny", {"truncation_head": 40})


def test_truncation_head_keeps_its_share_of_a_changed_max_length_unless_set():
    from trainer_module.text_encoder import FAMILY

    assert FAMILY.config("small", {"max_length": 128}).truncation_head == 32  # 64 of 256
    assert (
        FAMILY.config("small", {"max_length": 128, "truncation_head": 100}).truncation_head == 100
    )
    assert FAMILY.config("tiny", {"max_length": 8}).truncation_head == 2  # 8 of 32


def test_tiny_model_overfits_a_handful_of_sequences():
    keras.utils.set_random_seed(1)
    ids = np.array(
        [[1, 2, 3, 0], [4, 5, 0, 0], [1, 3, 2, 6], [7, 8, 9, 0], [6, 6, 1, 0], [9, 8, 0, 0]]
    )
    labels = np.array([1, 0, 1, 0, 1, 0])
    model = TextEncoderClassifier(
        TextEncoderConfig(
            vocab_size=8,
            max_length=4,
            truncation_head=4,
            d_model=16,
            num_heads=2,
            ff_dim=32,
            num_layers=1,
            dropout=0.0,
            ngram_buckets=0,
        )
    )
    model.compile(
        optimizer=keras.optimizers.Adam(5e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    for _ in range(60):
        model.train_on_batch(ids, labels)
    predicted = ops.convert_to_numpy(ops.argmax(model(ids), axis=-1))
    assert predicted.tolist() == labels.tolist()


@pytest.mark.parametrize(
    "decay, rate_at_end",
    [("inverse_sqrt", 1e-3 * (10 / 101) ** 0.5), ("linear", 0.0), ("cosine", 0.0)],
)
def test_build_model_decays_the_learning_rate_as_configured(decay, rate_at_end):
    config = PRESETS["tiny"].replace(
        decay=decay, peak_learning_rate=1e-3, warmup_fraction=0.1, ngram_buckets=0
    )
    optimizer = build_model(config, train_steps=100).optimizer

    def rate_at(step):
        optimizer.iterations.assign(step)
        return float(optimizer.learning_rate)

    assert rate_at(9) == pytest.approx(1e-3)  # the peak at the end of warmup
    assert rate_at(100) == pytest.approx(rate_at_end, abs=1e-9)


def test_an_unknown_decay_is_refused():
    with pytest.raises(ValueError, match="decay must be one of"):
        PRESETS["tiny"].replace(decay="step")


def test_the_wide_path_adds_its_logit_to_the_encoders_until_the_combination_is_fitted():
    config = PRESETS["tiny"].replace(vocab_size=20, dropout=0.0)
    ratios = np.zeros(config.ngram_buckets + 1, "float32")
    ratios[5], ratios[9] = 0.8, -0.3
    trained = build_model(config, train_steps=10, ngram_ratios=ratios)
    assert isinstance(trained, PathTraining)  # the encoder trains on its own loss
    model = trained.classifier
    assert not model.ngram_logit.trainable
    model.ngram_logit.coefficients.assign(np.full(config.ngram_buckets + 1, 0.5, "float32"))
    token_ids = np.array([[3, 4] + [0] * 30])
    without = ops.convert_to_numpy(
        model({"token_ids": token_ids, "ngram_ids": np.zeros((1, 32), "int32")})
    )
    grams = np.zeros((1, 32), "int32")
    grams[0, :2] = [5, 9]
    wide = 0.5 * (0.8 - 0.3)
    with_grams = ops.convert_to_numpy(model({"token_ids": token_ids, "ngram_ids": grams}))
    evidence = lambda logits: logits[:, 1] - logits[:, 0]  # noqa: E731
    np.testing.assert_allclose(evidence(with_grams) - evidence(without), [wide], rtol=1e-5)


def test_the_wide_path_needs_its_inputs_and_ratios():
    config = PRESETS["tiny"].replace(vocab_size=20)
    with pytest.raises(ValueError, match="a dict with ngram_ids"):
        TextEncoderClassifier(config)(np.ones((1, config.max_length), "int32"))
    with pytest.raises(ValueError, match="n-gram ratios"):
        build_model(config, train_steps=10)
    with pytest.raises(ValueError, match=r"ratios of shape \(257, 3\), not \(257,\)"):
        build_model(config.replace(num_classes=3), train_steps=10, ngram_ratios=np.zeros(257))
