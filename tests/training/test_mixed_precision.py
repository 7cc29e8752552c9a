"""Every family under mixed_bfloat16 (this CPU's fast path) and mixed_float16 (what
`mixed_precision=auto` picks on a GPU): the same outputs as float32 within a stated tolerance,
float32 variables and logits, a few training steps that lower the loss (under float16 through
the LossScaleOptimizer Keras puts in), masks that stay exact within float16's range (its
largest value is 65,504: a mask written as a large negative number would overflow), and the
global policy left as it was."""

import contextlib

import keras
import numpy as np
import pytest
from keras import ops

from trainer_module.training.optimizers import adamw
from trainer_module.training.sequence_losses import MaskedSequenceCrossEntropy

# bfloat16 keeps 8 bits of mantissa (about 2-3 significant digits), float16 11 (3-4) but a
# range of +-65,504: probabilities and logits agree with float32 within these, on these tiny
# random models.
TOLERANCES = {  # policy: (probabilities, logits)
    "mixed_bfloat16": (0.03, 0.15),
    "mixed_float16": (0.005, 0.02),
}
COMPUTE_DTYPES = {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


@contextlib.contextmanager
def global_policy(name: str):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def text_encoder():
    from trainer_module.text_encoder.config import PRESETS
    from trainer_module.text_encoder.model import TextEncoderClassifier

    rng = np.random.default_rng(0)
    ids = rng.integers(1, 22, size=(8, 32))
    ids[:, 20:] = 0
    inputs = {"token_ids": ids, "ngram_ids": rng.integers(0, 257, size=(8, 32))}
    return (
        lambda: TextEncoderClassifier(PRESETS["tiny"].replace(vocab_size=20)),
        inputs,
        np.eye(2)[np.arange(8) % 2],
        keras.losses.CategoricalCrossentropy(from_logits=True),
    )


def translator():
    from trainer_module.translator.config import PRESETS
    from trainer_module.translator.model import Translator

    ids = np.random.default_rng(0).integers(4, 24, size=(8, 10))
    ids[:, 7:] = 0
    inputs = {"source_ids": ids, "decoder_input_ids": ids}
    return (
        lambda: Translator(PRESETS["tiny"].replace(source_vocab_size=20, target_vocab_size=20)),
        inputs,
        ids,
        MaskedSequenceCrossEntropy(0.1),
    )


def vit(stem_pooling: bool = False):
    from trainer_module.vit.config import PRESETS
    from trainer_module.vit.model import VitClassifier

    # The hybrid: its convolutional stem (with BatchNorm) and the Transformer blocks.
    config = PRESETS["tiny"].replace(
        num_classes=4, tokenizer="hybrid", conv_filters=8, stem_pooling=stem_pooling
    )
    images = np.random.default_rng(0).normal(size=(8, 16, 16, 3)).astype("float32")
    return (
        lambda: VitClassifier(config),
        images,
        np.eye(4)[np.arange(8) % 4],
        keras.losses.CategoricalCrossentropy(from_logits=True),
    )


def bert(preset: str):
    from trainer_module.bert.config import PRESETS
    from trainer_module.bert.model import build_classifier

    rng = np.random.default_rng(0)
    inputs = {
        "token_ids": rng.integers(5, 50, size=(8, 12)),
        "segment_ids": np.zeros((8, 12), "int32"),
        "padding_mask": np.ones((8, 12), "int32"),
    }
    config = PRESETS["tiny"].replace(
        backbone_preset=preset, sequence_length=12, truncation_head=2, ngram_buckets=0
    )
    return (
        lambda: build_classifier(config),
        inputs,
        np.eye(2)[np.arange(8) % 2],
        keras.losses.CategoricalCrossentropy(from_logits=True),
    )


@pytest.fixture(params=["text_encoder", "translator", "vit", "vit_pooled_stem", "bert"])
def family(request, tiny_bert_preset):
    builders = {
        "text_encoder": text_encoder,
        "translator": translator,
        "vit": vit,
        "vit_pooled_stem": lambda: vit(stem_pooling=True),
        "bert": lambda: bert(tiny_bert_preset),
    }
    return request.param, builders[request.param]()


# The slow tier (the default tier's text encoder and ViT runs train in bfloat16 and export float32).
@pytest.mark.slow
@pytest.mark.parametrize("policy", sorted(TOLERANCES))
def test_mixed_precision_outputs_agree_with_float32_and_training_lowers_the_loss(family, policy):
    name, (build, inputs, labels, loss) = family
    probability_tolerance, logit_tolerance = TOLERANCES[policy]
    with global_policy("float32"):
        keras.utils.set_random_seed(0)
        reference = build()
        expected = ops.convert_to_numpy(reference(inputs, training=False))
    with global_policy(policy):
        model = build()
        model(inputs, training=False)
        model.set_weights(reference.get_weights())
        logits = model(inputs, training=False)
        assert {w.dtype for w in model.weights} == {"float32"}  # variables stay float32
        assert model.compute_dtype == COMPUTE_DTYPES[policy]
        assert ops.convert_to_numpy(logits).dtype == np.float32  # every head is float32
        got = ops.convert_to_numpy(ops.cast(logits, "float32"))
        assert np.all(np.isfinite(got)), name  # nothing overflowed float16's range
        np.testing.assert_allclose(got, expected, atol=logit_tolerance, rtol=0)
        np.testing.assert_allclose(
            ops.convert_to_numpy(ops.softmax(got)),
            ops.convert_to_numpy(ops.softmax(expected)),
            atol=probability_tolerance,
            rtol=0,
        )
        model.compile(optimizer=adamw(3e-3, 0.0), loss=loss, metrics=[])
        if policy == "mixed_float16":  # Keras scales the loss so float16 gradients keep range
            assert type(model.optimizer).__name__ == "LossScaleOptimizer"

        # Losses measured without dropout, so the steps' random masks cannot hide progress.
        def loss_now():
            return float(model.evaluate(inputs, labels, verbose=0, return_dict=True)["loss"])

        before = loss_now()
        # Four applied steps: under float16 the loss scale starts high, and the steps whose
        # scaled gradients overflow are skipped (the scale halves) before any is applied.
        steps = []
        while int(ops.convert_to_numpy(model.optimizer.iterations)) < 4 and len(steps) < 24:
            steps.append(float(model.train_on_batch(inputs, labels, return_dict=True)["loss"]))
        assert int(ops.convert_to_numpy(model.optimizer.iterations)) == 4, (name, steps)
        after = loss_now()
    assert all(np.isfinite(steps)), (name, steps)
    assert after < before, (name, before, after)
    assert keras.mixed_precision.global_policy().name == "float32"  # nothing leaked


@pytest.mark.parametrize("policy", sorted(TOLERANCES))
def test_attention_softmax_is_float32_and_masks_exactly_under_mixed_precision(policy):
    from trainer_module.layers import MultiHeadAttention

    x = np.random.default_rng(1).normal(size=(2, 5, 8)).astype("float32")
    with global_policy("float32"):
        reference = MultiHeadAttention(num_heads=1, key_dim=16)
        reference(x)
        # Activations scaled so that the largest query-key product is 160,000: past float16's
        # 65,504, and 40,000 once divided by sqrt(16), as the scores are.
        q = ops.convert_to_numpy(reference.query_dense(x))
        k = ops.convert_to_numpy(reference.key_dense(x))
        x = x * np.sqrt(160_000 / np.abs(np.einsum("btd,bsd->bts", q, k)).max())
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)[:, None, :]
    with global_policy(policy):
        attention = MultiHeadAttention(num_heads=1, key_dim=16)
        attention(x)
        attention.set_weights(reference.get_weights())
        out, weights = attention(x, attention_mask=mask)
    assert out.dtype == COMPUTE_DTYPES[policy] and weights.dtype == "float32"
    assert np.all(np.isfinite(ops.convert_to_numpy(ops.cast(out, "float32"))))
    weights = ops.convert_to_numpy(weights)
    assert np.all(weights[0, :, :, 3:] == 0)  # masked keys: exactly zero
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-6)
