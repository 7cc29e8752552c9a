import numpy as np
import pytest
from keras import ops

from lab.tiny_bert import write_tiny_checkpoint
from trainer_module.bert import FAMILY
from trainer_module.bert.config import transform_config
from trainer_module.bert.model import build_classifier, example_inputs

get_preset = FAMILY.config


def test_classifier_from_a_local_keras_hub_preset(tiny_bert_preset):
    model = build_classifier(
        get_preset("tiny", {"backbone_preset": tiny_bert_preset, "ngram_buckets": 0})
    )
    inputs = {
        "token_ids": np.array([[2, 30, 31, 3, 0, 0]]),
        "segment_ids": np.zeros((1, 6), dtype="int32"),
        "padding_mask": np.array([[1, 1, 1, 1, 0, 0]]),
    }
    assert tuple(model(inputs).shape) == (1, 2)
    assert model.backbone.num_layers == 2


@pytest.fixture(scope="module")
def hf_checkpoint(tmp_path_factory):
    return write_tiny_checkpoint(
        str(tmp_path_factory.mktemp("hf")),
        num_layers=3,
        hidden_dim=8,
        num_heads=2,
        intermediate_dim=16,
        max_sequence_length=64,
    )


def trainable(model) -> set:
    """The trainable weights' paths, each without the classifier's own name (the backbone's
    weights have none)."""
    return {w.path.removeprefix(model.name + "/") for w in model.trainable_weights}


def test_phases_train_the_head_then_all_but_the_frozen_layers(hf_checkpoint):
    config = get_preset("tiny", {"backbone_preset": hf_checkpoint, "frozen_layers": 2})
    model = build_classifier(config, np.ones(config.ngram_buckets + 1))
    model.train_phase("head")
    assert trainable(model) == {"logits/kernel", "logits/bias"}
    model.train_phase("full")
    names = trainable(model)
    assert "logits/kernel" in names and not any(n.startswith("ngram_logit") for n in names)
    blocks = {n.split("/")[0] for n in names if n.startswith("transformer_layer")}
    assert blocks == {"transformer_layer_2"}  # the bottom two frozen
    assert not any("embedding" in n for n in names)
    assert {"pooled_dense/kernel", "pooled_dense/bias"} <= names
    mean = build_classifier(config.replace(pooling="mean"), np.ones(config.ngram_buckets + 1))
    mean.train_phase("full")  # the pooler is not read: it does not train
    assert not {n for n in trainable(mean) if n.startswith("pooled_dense")}
    unfrozen = build_classifier(config.replace(frozen_layers=0), np.ones(config.ngram_buckets + 1))
    unfrozen.train_phase("full")
    # All but the wide path (which trains apart) and the combination.
    wide = len(unfrozen.ngram_logit.weights) + len(unfrozen.combination.weights)
    assert len(unfrozen.trainable_weights) == len(unfrozen.weights) - wide


def test_the_wide_path_adds_its_logit_to_berts_until_the_combination_is_fitted(hf_checkpoint):
    config = get_preset("tiny", {"backbone_preset": hf_checkpoint, "dropout": 0.0})
    ratios = np.zeros(config.ngram_buckets + 1, "float32")
    ratios[5], ratios[9] = 0.8, -0.3
    model = build_classifier(config, ratios)
    model.ngram_logit.coefficients.assign(np.full(config.ngram_buckets + 1, 0.5, "float32"))
    inputs = example_inputs(config)
    without = ops.convert_to_numpy(model(inputs))
    inputs["ngram_ids"][0, :2] = [5, 9]
    with_grams = ops.convert_to_numpy(model(inputs))
    evidence = lambda logits: logits[:, 1] - logits[:, 0]  # noqa: E731
    np.testing.assert_allclose(
        evidence(with_grams) - evidence(without), [0.5 * (0.8 - 0.3)], rtol=1e-5
    )
    assert tuple(model(inputs).shape) == (1, 2)
    paths = ops.convert_to_numpy(model.path_logits(inputs))  # combination, BERT's, the wide path's
    assert paths.shape == (1, 3, 2)
    np.testing.assert_allclose(paths[:, 0], with_grams, rtol=1e-6)


def test_impossible_settings_are_refused(hf_checkpoint, tiny_bert_preset):
    with pytest.raises(ValueError, match="exceeds the backbone's max_sequence_length=64"):
        build_classifier(
            get_preset(
                "tiny",
                {"backbone_preset": tiny_bert_preset, "sequence_length": 128, "ngram_buckets": 0},
            )
        )
    with pytest.raises(ValueError, match="frozen_layers=4 exceeds the backbone's 3 layers"):
        build_classifier(get_preset("tiny", {"backbone_preset": hf_checkpoint, "frozen_layers": 4}))
    with pytest.raises(ValueError, match="n-gram ratios"):
        build_classifier(get_preset("tiny", {"backbone_preset": hf_checkpoint}))


def test_presets_reject_unknown_fields_and_bad_values():
    with pytest.raises(ValueError, match="unknown BertConfig fields"):
        get_preset("tiny", {"hidden": 3})
    with pytest.raises(ValueError, match="head_fraction"):
        get_preset("tiny", {"head_fraction": 1.0})
    with pytest.raises(
        ValueError, match="truncation_head=31 must be between 0 and sequence_length - 2 = 30"
    ):
        get_preset("tiny", {"truncation_head": 31})
    with pytest.raises(ValueError, match="holdout_percent must be between 1 and 99"):
        get_preset("tiny", {"num_classes": 3, "holdout_percent": 0})


def test_truncation_head_keeps_its_share_of_a_changed_sequence_length_unless_set():
    config = get_preset("default", {"sequence_length": 64})  # 64 of 318 pieces: 12 of 62
    assert (config.sequence_length, config.truncation_head) == (64, 12)
    assert transform_config(config)["truncation_head"] == 12
    assert get_preset("default", {"sequence_length": 512}).truncation_head == 103
    assert get_preset("default", {"sequence_length": 3}).truncation_head == 0
    assert (
        get_preset("default", {"sequence_length": 64, "truncation_head": 62}).truncation_head == 62
    )
    assert get_preset("default", {"sequence_length": 320}).truncation_head == 64
    with pytest.raises(ValueError, match="truncation_head=63 must be between 0 and"):
        get_preset("default", {"sequence_length": 64, "truncation_head": 63})


def sequence_inputs(batch_size: int = 2, length: int = 12) -> dict:
    rng = np.random.default_rng(0)
    padding_mask = np.ones((batch_size, length), "int32")
    padding_mask[0, length // 2 :] = 0
    return {
        "token_ids": rng.integers(5, 60, size=(batch_size, length)).astype("int32"),
        "segment_ids": np.zeros((batch_size, length), "int32"),
        "padding_mask": padding_mask,
    }


def test_the_classifier_encodes_as_the_backbones_own_graph(hf_checkpoint):
    config = get_preset("tiny", {"backbone_preset": hf_checkpoint, "ngram_buckets": 0})
    model = build_classifier(config)
    inputs = sequence_inputs()
    own = model.backbone(inputs)
    np.testing.assert_allclose(
        ops.convert_to_numpy(model.encode(inputs)),
        ops.convert_to_numpy(own["sequence_output"]),
        atol=1e-6,
    )
    # The "cls" head reads the backbone's pooled output: with dropout 0, the logits are a
    # dense layer of it.
    model = build_classifier(config.replace(dropout=0.0))
    pooled = ops.convert_to_numpy(model.backbone(inputs)["pooled_output"])
    kernel, bias = (ops.convert_to_numpy(w) for w in model.head.weights)
    np.testing.assert_allclose(
        ops.convert_to_numpy(model(inputs)), pooled @ kernel + bias, atol=1e-5
    )


def test_frozen_blocks_drop_nothing_in_training_and_trained_blocks_do(hf_checkpoint):
    config = get_preset("tiny", {"backbone_preset": hf_checkpoint, "ngram_buckets": 0})
    inputs = sequence_inputs()

    def encoded(model, training):
        return ops.convert_to_numpy(model.encode(inputs, training=training))

    model = build_classifier(config.replace(frozen_layers=2))
    model.train_phase("head")  # the whole backbone frozen
    np.testing.assert_array_equal(encoded(model, True), encoded(model, False))
    model.train_phase("full")  # the top block trains, with its dropout
    assert not np.allclose(encoded(model, True), encoded(model, False))
    all_frozen = build_classifier(config.replace(frozen_layers=3))
    all_frozen.train_phase("full")
    np.testing.assert_array_equal(encoded(all_frozen, True), encoded(all_frozen, False))


def test_attention_dropout_is_its_own_rate(hf_checkpoint):
    config = get_preset("tiny", {"backbone_preset": hf_checkpoint, "ngram_buckets": 0})
    x = np.random.default_rng(1).normal(size=(2, 12, 8)).astype("float32")

    def attention_runs(model):
        attention = model.backbone.transformer_layers[0]._self_attention_layer
        return [ops.convert_to_numpy(attention(x, x, training=True)) for _ in range(2)]

    first, second = attention_runs(build_classifier(config.replace(attention_dropout=0.0)))
    np.testing.assert_array_equal(first, second)
    first, second = attention_runs(build_classifier(config.replace(attention_dropout=0.5)))
    assert not np.allclose(first, second)
    # None keeps the checkpoint's rate (the tiny checkpoint's 0.1), shared with the hidden states.
    checkpoints = build_classifier(config.replace(attention_dropout=None))
    checkpoints = checkpoints.backbone.transformer_layers[0]._self_attention_layer
    assert checkpoints._dropout == pytest.approx(0.1)
    with pytest.raises(ValueError, match=r"attention_dropout must be in \[0, 1\), not 1.0"):
        get_preset("tiny", {"attention_dropout": 1.0})


def test_only_the_full_phase_keeps_an_average_of_the_weights(hf_checkpoint):
    from trainer_module.bert.training import compile_phase

    config = get_preset("tiny", {"backbone_preset": hf_checkpoint, "ema_momentum": 0.99})
    model = build_classifier(config, np.ones(config.ngram_buckets + 1))
    compile_phase(model, config, "head", config.head_learning_rate)
    assert not model.optimizer.use_ema
    compile_phase(model, config, "full", config.peak_learning_rate)
    assert model.optimizer.use_ema and model.optimizer.ema_momentum == 0.99
    compile_phase(model, config.replace(ema_momentum=0.0), "full", config.peak_learning_rate)
    assert not model.optimizer.use_ema
    with pytest.raises(ValueError, match="ema_momentum"):
        config.replace(ema_momentum=1.0)


def test_layer_decay_slows_each_block_below_the_top_and_the_embeddings_most(hf_checkpoint):
    """layer_decay in phase 2: the top block at the peak rate, each one below at the decay
    times the one above, the embeddings at the decay times the lowest block; the head and the
    wide path unscaled. Phase 1 and a decay of 1 scale nothing."""
    from trainer_module.bert.model import EMBEDDING_LAYERS
    from trainer_module.bert.training import compile_phase

    config = get_preset("tiny", {"backbone_preset": hf_checkpoint, "layer_decay": 0.5})
    model = build_classifier(config, np.ones(config.ngram_buckets + 1))
    backbone = model.backbone
    compile_phase(model, config, "full", config.peak_learning_rate)
    blocks = backbone.transformer_layers
    embeddings = [v for name in EMBEDDING_LAYERS for v in backbone.get_layer(name).weights]
    assert len(blocks) >= 2 and model.optimizer.scales == {
        **{v.path: 0.5 ** (len(blocks) - 1 - i) for i, b in enumerate(blocks) for v in b.weights},
        **{v.path: 0.5 ** len(blocks) for v in embeddings},
    }
    assert {model.optimizer.scales[v.path] for v in blocks[-1].weights} == {1.0}
    assert all(v.path not in model.optimizer.scales for v in model.head.weights)
    compile_phase(model, config, "head", config.head_learning_rate)
    assert not getattr(model.optimizer, "scales", None)
    compile_phase(model, config.replace(layer_decay=1.0), "full", config.peak_learning_rate)
    assert not getattr(model.optimizer, "scales", None)
    with pytest.raises(ValueError, match="layer_decay"):
        config.replace(layer_decay=0.0)
