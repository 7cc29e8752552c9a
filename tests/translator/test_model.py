import keras
import numpy as np
import pytest
from keras import ops

from trainer_module.training.optimizers import adamw
from trainer_module.training.sequence_losses import MaskedSequenceCrossEntropy
from trainer_module.translator import FAMILY
from trainer_module.translator.config import PRESETS, TranslatorConfig
from trainer_module.translator.decoding import make_generate
from trainer_module.translator.model import Translator

# Four "sentences" of ids (4+ are words; 0 pads, 2 = [START], 3 = [END]).
SOURCES = [[4, 5, 6, 0], [7, 8, 0, 0], [9, 5, 10, 11], [12, 0, 0, 0]]
TARGETS = [[5, 4, 6], [8, 9, 10, 11], [7], [6, 6, 5]]


def tiny(words: int = 16, length: int = 8, **overrides) -> Translator:
    """A translator over `words` words per language (ids up to words + 3)."""
    keras.utils.set_random_seed(0)
    config = TranslatorConfig(
        source_vocab_size=words,
        target_vocab_size=words,
        max_source_length=length,
        max_target_length=length,
        max_decode_length=length - 1,
        d_model=32,
        num_heads=2,
        ff_dim=64,
        encoder_layers=1,
        decoder_layers=1,
        dropout=0.0,
    )
    model = Translator(config.replace(**overrides))
    ids = np.ones((1, 2), dtype="int32")
    model({"source_ids": ids, "decoder_input_ids": ids})  # build the weights
    return model


def shifted(targets, length):
    decoder_inputs = [[2] + t + [0] * (length - 1 - len(t)) for t in targets]
    labels = [t + [3] + [0] * (length - 1 - len(t)) for t in targets]
    return np.array(decoder_inputs), np.array(labels)


def test_logits_shape_and_future_target_tokens_do_not_change_earlier_logits():
    model = tiny(words=12)
    source = np.array([[4, 5, 6, 0]])
    target = np.array([[2, 5, 7, 9, 0]])
    logits = ops.convert_to_numpy(model({"source_ids": source, "decoder_input_ids": target}))
    assert logits.shape == (1, 5, 16)  # 12 words + 4 reserved ids
    changed = target.copy()
    changed[0, 3] = 12
    logits_changed = ops.convert_to_numpy(
        model({"source_ids": source, "decoder_input_ids": changed})
    )
    np.testing.assert_allclose(logits_changed[:, :3], logits[:, :3], rtol=1e-5, atol=1e-5)
    assert not np.allclose(logits_changed[:, 3], logits[:, 3])


def test_padding_in_the_source_does_not_change_the_translation_logits():
    model = tiny()
    target = np.array([[2, 5, 7]])
    short = model({"source_ids": np.array([[4, 5, 0, 0, 0, 0]]), "decoder_input_ids": target})
    longer = model({"source_ids": np.array([[4, 5, 0]]), "decoder_input_ids": target})
    np.testing.assert_allclose(
        ops.convert_to_numpy(short), ops.convert_to_numpy(longer), rtol=1e-5, atol=1e-5
    )


@pytest.mark.slow
def test_an_untied_post_norm_learned_position_model_overfits_to_exact_outputs():
    """The default variant is the session's translator_run (test_serving.py checks it)."""
    model = tiny(tie_output_embeddings=False, norm_first=False, positional="learned")
    model.compile(optimizer=adamw(5e-3, 0.0), loss=MaskedSequenceCrossEntropy())
    decoder_inputs, labels = shifted(TARGETS, 6)
    inputs = {"source_ids": np.array(SOURCES), "decoder_input_ids": decoder_inputs}
    for _ in range(100):
        model.train_on_batch(inputs, labels)
    generated = ops.convert_to_numpy(
        make_generate(model, max_decode_length=5, beam_width=1)(np.array(SOURCES, "int32"))
    )
    for row, target in zip(generated, TARGETS):
        assert row[0] == 2  # [START]
        assert row[1 : len(target) + 2].tolist() == target + [3]  # exact tokens, then [END]
        assert np.all(row[len(target) + 2 :] == 0)  # padding after [END]


def test_shared_vocabulary_shares_one_embedding_and_needs_equal_sizes():
    model = tiny(shared_vocabulary=True)
    assert model.source_embedding is model.target_embedding
    with pytest.raises(ValueError, match="one vocabulary size"):
        Translator(
            PRESETS["tiny"].replace(
                shared_vocabulary=True, source_vocab_size=12, target_vocab_size=10
            )
        )


def test_config_round_trip_rebuilds_the_same_model():
    model = tiny(norm_first=False, tie_output_embeddings=False)
    clone = Translator.from_config(model.get_config())
    assert clone.config == model.config
    ids = np.array([[4, 5, 0]])
    clone({"source_ids": ids, "decoder_input_ids": ids})
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(
        ops.convert_to_numpy(clone({"source_ids": ids, "decoder_input_ids": ids})),
        ops.convert_to_numpy(model({"source_ids": ids, "decoder_input_ids": ids})),
        rtol=1e-6,
    )


def test_presets_validate_and_refuse_unknown_fields():
    assert set(PRESETS) == {"tiny", "small", "base"}
    base = FAMILY.config("base")
    assert (base.encoder_layers, base.decoder_layers, base.d_model) == (3, 3, 256)
    with pytest.raises(ValueError, match="unknown TranslatorConfig fields"):
        FAMILY.config("tiny", {"depth": 2})
    with pytest.raises(ValueError, match="beam_width"):
        FAMILY.config("tiny", {"beam_width": 0})


@pytest.mark.parametrize("max_length", [None, 8])  # a growing cache; fixed slots, shifted
@pytest.mark.parametrize(
    "overrides",
    [{}, {"norm_first": False, "positional": "learned", "tie_output_embeddings": False}],
)
def test_cached_decoding_steps_match_decoding_the_whole_prefix(overrides, max_length):
    model = tiny(length=8, decoder_layers=2, **overrides)
    source = np.array([[4, 5, 6, 0], [7, 8, 9, 10]])
    target = np.array([[2, 5, 7, 9, 11, 4], [2, 6, 6, 8, 12, 13]])
    memory, source_mask, _ = model.encode(source)
    full, _, _ = model.decode(target, memory, source_mask)
    cache = model.start_decoding(memory, source_mask, max_length=max_length)
    for position in range(target.shape[1]):
        step, cache = model.decode_step(
            target[:, position : position + 1], position, cache, shift=bool(max_length)
        )
        positions = max_length or position + 1  # the cache's length after the step
        assert all(ops.shape(x)[2] == positions for x in cache["history"])
        np.testing.assert_allclose(
            ops.convert_to_numpy(step)[:, 0],
            ops.convert_to_numpy(full)[:, position],
            rtol=1e-4,
            atol=1e-4,
        )


def test_a_cache_with_repeated_rows_is_the_cache_of_the_repeated_memory():
    """A beam search's cache: each sentence's rows `repeats` times in a row, projected once."""
    model = tiny(decoder_layers=2)
    memory, source_mask, _ = model.encode(np.array([[4, 5, 6, 0], [7, 8, 0, 0]]))
    repeated = model.start_decoding(memory, source_mask, repeats=3)
    expected = model.start_decoding(
        ops.repeat(memory, 3, axis=0), ops.repeat(source_mask, 3, axis=0)
    )
    assert ops.shape(repeated["source_mask"]) == (6, 4)
    for key in ("history", "memory", "source_mask"):
        entries = [c[key] if isinstance(c[key], tuple) else (c[key],) for c in (repeated, expected)]
        for got, want in zip(*entries):
            assert ops.shape(got) == ops.shape(want)
            np.testing.assert_allclose(
                ops.convert_to_numpy(got), ops.convert_to_numpy(want), rtol=1e-6, atol=1e-6
            )


@pytest.mark.parametrize(
    "decay, rate_at_end", [("inverse_sqrt", 1e-3 * (10 / 101) ** 0.5), ("cosine", 0.0)]
)
def test_build_model_decays_the_learning_rate_as_configured(decay, rate_at_end):
    """The schedules themselves: tests/training/test_schedules.py."""
    from trainer_module.translator.model import build_model

    config = PRESETS["tiny"].replace(
        source_vocab_size=16, target_vocab_size=16, decay=decay, warmup_fraction=0.1
    )
    optimizer = build_model(config.replace(peak_learning_rate=1e-3), train_steps=100).optimizer
    optimizer.iterations.assign(100)
    assert float(optimizer.learning_rate) == pytest.approx(rate_at_end, abs=1e-9)
    with pytest.raises(ValueError, match="decay must be one of"):
        config.replace(decay="step")
