import numpy as np
import pytest
from keras import ops

from tests.translation_util import overfit, tiny_translator
from trainer_module.models.translator import TransformerTranslator
from trainer_module.models.translator_presets import PRESETS, get_preset
from trainer_module.serving.translator import make_generate

# Four "sentences" of ids (4+ are words; 0 pads, 2 = [START], 3 = [END]).
SOURCES = [[4, 5, 6, 0], [7, 8, 0, 0], [9, 5, 10, 11], [12, 0, 0, 0]]
TARGETS = [[5, 4, 6], [8, 9, 10, 11], [7], [6, 6, 5]]


def shifted(targets, length):
    decoder_inputs = [[2] + t + [0] * (length - 1 - len(t)) for t in targets]
    labels = [t + [3] + [0] * (length - 1 - len(t)) for t in targets]
    return np.array(decoder_inputs), np.array(labels)


def test_logits_shape_and_future_target_tokens_do_not_change_earlier_logits():
    model = tiny_translator(20, 16, length=6)
    source = np.array([[4, 5, 6, 0]])
    target = np.array([[2, 5, 7, 9, 0]])
    logits = ops.convert_to_numpy(model({"source_ids": source, "decoder_input_ids": target}))
    assert logits.shape == (1, 5, 16)
    changed = target.copy()
    changed[0, 3] = 12
    logits_changed = ops.convert_to_numpy(model({"source_ids": source,
                                                 "decoder_input_ids": changed}))
    np.testing.assert_allclose(logits_changed[:, :3], logits[:, :3], rtol=1e-5, atol=1e-5)
    assert not np.allclose(logits_changed[:, 3], logits[:, 3])


def test_padding_in_the_source_does_not_change_the_translation_logits():
    model = tiny_translator(20, 16, length=8)
    target = np.array([[2, 5, 7]])
    short = model({"source_ids": np.array([[4, 5, 0, 0, 0, 0]]), "decoder_input_ids": target})
    longer = model({"source_ids": np.array([[4, 5, 0]]), "decoder_input_ids": target})
    np.testing.assert_allclose(ops.convert_to_numpy(short), ops.convert_to_numpy(longer),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("options", [{}, {"tie_output_embeddings": False, "norm_first": False,
                                          "positional": "learned"}])
def test_a_tiny_model_overfits_a_handful_of_pairs_to_exact_outputs(options):
    model = tiny_translator(16, 16, length=6, **options)
    decoder_inputs, labels = shifted(TARGETS, 6)
    assert overfit(model, SOURCES, decoder_inputs, labels, epochs=200) == 1.0
    generated = ops.convert_to_numpy(
        make_generate(model, max_decode_length=5, beam_width=1)(np.array(SOURCES, "int32")))
    for row, target in zip(generated, TARGETS):
        assert row[0] == 2  # [START]
        assert row[1:len(target) + 2].tolist() == target + [3]  # exact tokens, then [END]
        assert np.all(row[len(target) + 2:] == 0)  # padding after [END]


def test_shared_embeddings_need_one_vocabulary():
    model = TransformerTranslator(12, 12, 4, 4, d_model=8, num_heads=2, ff_dim=8,
                                  encoder_layers=1, decoder_layers=1, shared_embeddings=True)
    assert model.source_embedding is model.target_embedding
    with pytest.raises(ValueError, match="one vocabulary"):
        TransformerTranslator(12, 10, 4, 4, shared_embeddings=True)


def test_presets_validate_and_refuse_unknown_fields():
    assert set(PRESETS) == {"tiny", "small", "base"}
    base = get_preset("base")
    assert (base.encoder_layers, base.decoder_layers, base.d_model) == (3, 3, 256)
    with pytest.raises(ValueError, match="unknown TranslatorConfig fields"):
        get_preset("tiny", {"layers": 2})
    with pytest.raises(ValueError, match="beam_width"):
        get_preset("tiny", {"beam_width": 0})


@pytest.mark.parametrize("options", [{}, {"norm_first": False, "positional": "learned",
                                          "tie_output_embeddings": False}])
def test_cached_decoding_steps_match_decoding_the_whole_prefix(options):
    model = tiny_translator(20, 16, length=8, decoder_layers=2, **options)
    source = np.array([[4, 5, 6, 0], [7, 8, 9, 10]])
    target = np.array([[2, 5, 7, 9, 11, 4], [2, 6, 6, 8, 12, 13]])
    memory, source_mask, _ = model.encode(source)
    full, _, _ = model.decode(target, memory, source_mask)
    cache = model.start_decoding(memory, source_mask, max_length=8)
    for position in range(target.shape[1]):
        step, cache = model.decode_step(target[:, position:position + 1], position, cache)
        np.testing.assert_allclose(ops.convert_to_numpy(step)[:, 0],
                                   ops.convert_to_numpy(full)[:, position], rtol=1e-4, atol=1e-4)
