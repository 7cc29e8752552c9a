"""Hugging Face checkpoints ported into KerasHub's BertBackbone: tiny random checkpoints written
here in Transformers' layout, in both key-naming styles, loaded through the family's own path."""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file

from lab.tiny_bert import (
    VOCABULARY,
    tiny_transformers_config,
    transformers_weights,
    write_tiny_checkpoint,
)
from tests.bert.numpy_bert import bert_forward
from trainer_module.bert.checkpoint import (
    CheckpointError,
    is_transformers_checkpoint,
    load_backbone,
    load_tokenizer,
)

SHAPE = {
    "num_layers": 2,
    "hidden_dim": 8,
    "num_heads": 2,
    "intermediate_dim": 16,
    "max_sequence_length": 16,
}


@pytest.fixture(scope="module", params=["bert_model", "pretraining"])
def checkpoint(request, tmp_path_factory):
    """(folder, the weights by their BertModel names) of a tiny checkpoint in one style."""
    folder = write_tiny_checkpoint(
        str(tmp_path_factory.mktemp(request.param)), style=request.param, **SHAPE
    )
    weights = load_file(os.path.join(folder, "model.safetensors"))
    plain = {
        k.removeprefix("bert.")
        .replace("LayerNorm.gamma", "LayerNorm.weight")
        .replace("LayerNorm.beta", "LayerNorm.bias"): v
        for k, v in weights.items()
    }
    return folder, plain


def test_every_ported_weight_equals_its_source_exactly(checkpoint):
    folder, w = checkpoint
    backbone = load_backbone(folder)
    hidden, heads = 8, 2

    def value(layer, attribute):
        return np.asarray(getattr(layer, attribute).numpy())

    embeddings = {
        "token_embedding": w["embeddings.word_embeddings.weight"],
        "position_embedding": w["embeddings.position_embeddings.weight"],
        "segment_embedding": w["embeddings.token_type_embeddings.weight"],
    }
    for name, source in embeddings.items():
        np.testing.assert_array_equal(backbone.get_layer(name).weights[0].numpy(), source)
    norm = backbone.get_layer("embeddings_layer_norm")
    np.testing.assert_array_equal(value(norm, "gamma"), w["embeddings.LayerNorm.weight"])
    np.testing.assert_array_equal(value(norm, "beta"), w["embeddings.LayerNorm.bias"])
    for i, block in enumerate(backbone.transformer_layers):
        p = f"encoder.layer.{i}"
        attention = block._self_attention_layer
        for name, dense in (
            ("query", attention.query_dense),
            ("key", attention.key_dense),
            ("value", attention.value_dense),
        ):
            # (out, in) torch layout -> KerasHub's (hidden, heads, head size) einsum kernel.
            np.testing.assert_array_equal(
                value(dense, "kernel"),
                w[f"{p}.attention.self.{name}.weight"].T.reshape(hidden, heads, -1),
            )
            np.testing.assert_array_equal(
                value(dense, "bias"), w[f"{p}.attention.self.{name}.bias"].reshape(heads, -1)
            )
        np.testing.assert_array_equal(
            value(attention.output_dense, "kernel"),
            w[f"{p}.attention.output.dense.weight"].T.reshape(heads, -1, hidden),
        )
        for dense, key in (
            (block._feedforward_intermediate_dense, "intermediate.dense"),
            (block._feedforward_output_dense, "output.dense"),
        ):
            np.testing.assert_array_equal(value(dense, "kernel"), w[f"{p}.{key}.weight"].T)
            np.testing.assert_array_equal(value(dense, "bias"), w[f"{p}.{key}.bias"])
        for norm, key in (
            (block._self_attention_layer_norm, "attention.output.LayerNorm"),
            (block._feedforward_layer_norm, "output.LayerNorm"),
        ):
            np.testing.assert_array_equal(value(norm, "gamma"), w[f"{p}.{key}.weight"])
            np.testing.assert_array_equal(value(norm, "beta"), w[f"{p}.{key}.bias"])
    pooler = backbone.get_layer("pooled_dense")
    np.testing.assert_array_equal(value(pooler, "kernel"), w["pooler.dense.weight"].T)


def test_the_backbone_computes_what_a_numpy_bert_computes(checkpoint):
    folder, w = checkpoint
    config = json.load(open(os.path.join(folder, "config.json")))
    token_ids = np.array([[2, 30, 31, 40, 3, 0, 0], [2, 7, 3, 0, 0, 0, 0]])
    segment_ids = np.array([[0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0, 0]])
    padding_mask = (token_ids > 0).astype("int32")
    padding_mask[1, 2] = 1
    sequence, pooled = bert_forward(w, config, token_ids, segment_ids, padding_mask)
    outputs = load_backbone(folder)(
        {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
    )
    real = padding_mask.astype(bool)  # padded positions are not defined outputs
    np.testing.assert_allclose(
        np.asarray(outputs["sequence_output"])[real], sequence[real], rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(outputs["pooled_output"], pooled, rtol=1e-4, atol=1e-5)


def broken(tmp_path, change) -> str:
    """A checkpoint whose weights `change(weights)` altered."""
    weights = transformers_weights(tiny_transformers_config(**SHAPE))
    change(weights)
    return write_tiny_checkpoint(str(tmp_path / "broken"), weights=weights, **SHAPE)


def test_a_missing_weight_is_named_with_its_variable(tmp_path):
    folder = broken(tmp_path, lambda w: w.pop("encoder.layer.1.output.dense.bias"))
    with pytest.raises(
        CheckpointError,
        match=r"no weight in the checkpoint for "
        r"\S*transformer_layer_1/feedforward_output_dense/bias \(as "
        r"bert.encoder.layer.1.output.dense.bias\)",
    ):
        load_backbone(folder)


def test_an_unknown_weight_is_named(tmp_path):
    def add(w):
        w["encoder.layer.0.attention.self.rotary.weight"] = np.zeros(2, "float32")

    with pytest.raises(
        CheckpointError,
        match="keys of no BertBackbone weight: encoder.layer.0.attention.self.rotary.weight",
    ):
        load_backbone(broken(tmp_path, add))


def test_a_weight_of_the_wrong_shape_is_named_with_both_shapes(tmp_path):
    def shrink(w):
        w["pooler.dense.bias"] = np.zeros(3, "float32")

    with pytest.raises(
        CheckpointError,
        match=r"model.safetensors: pooler.dense.bias has shape "
        r"\(3,\); \S*pooled_dense/bias needs \(8,\)",
    ):
        load_backbone(broken(tmp_path, shrink))


def test_a_checkpoint_in_both_styles_at_once_is_ambiguous(tmp_path):
    def twice(w):
        w["bert.pooler.dense.bias"] = w["pooler.dense.bias"]

    with pytest.raises(CheckpointError, match="has bert.pooler.dense.bias twice"):
        load_backbone(broken(tmp_path, twice))


def test_other_models_and_other_formats_are_refused(tmp_path):
    folder = write_tiny_checkpoint(str(tmp_path / "roberta"), **SHAPE)
    config = json.load(open(os.path.join(folder, "config.json")))
    json.dump({**config, "model_type": "roberta"}, open(os.path.join(folder, "config.json"), "w"))
    with pytest.raises(CheckpointError, match="config.json: model_type 'roberta'"):
        load_backbone(folder)
    json.dump({**config, "hidden_act": "relu"}, open(os.path.join(folder, "config.json"), "w"))
    with pytest.raises(CheckpointError, match="hidden_act 'relu' is not a GELU"):
        load_backbone(folder)
    json.dump(config, open(os.path.join(folder, "config.json"), "w"))
    os.rename(os.path.join(folder, "model.safetensors"), os.path.join(folder, "weights.bin"))
    with pytest.raises(CheckpointError, match="no model.safetensors .*safe_serialization=True"):
        load_backbone(folder)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(b'\x08\x00\x00\x00\x00\x00\x00\x00{"a":')  # a truncated header
    with pytest.raises(CheckpointError, match="model.safetensors: not a readable safetensors"):
        load_backbone(folder)


def test_what_is_a_checkpoint_and_what_is_a_preset_name(tmp_path, tiny_bert_preset):
    assert is_transformers_checkpoint(write_tiny_checkpoint(str(tmp_path / "hf"), **SHAPE))
    assert not is_transformers_checkpoint(tiny_bert_preset)  # a KerasHub preset folder
    assert not is_transformers_checkpoint("bert_base_en_uncased")  # a name: not looked up
    with pytest.raises(FileNotFoundError, match="BERT preset ./nowhere: no such folder"):
        is_transformers_checkpoint("./nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty/config.json not found"):
        is_transformers_checkpoint(str(tmp_path / "empty"))


def test_the_tokenizer_follows_the_checkpoints_vocabulary_and_casing(tmp_path):
    folder = write_tiny_checkpoint(str(tmp_path / "uncased"), **SHAPE)
    tokenizer = load_tokenizer(folder)

    def ids(*tokens):
        return [VOCABULARY.index(t) for t in tokens]

    # Lower-cased, accents stripped (Transformers' default with do_lower_case), WordPieces.
    assert tokenizer(["The FILM was Gréat!"])[0] == ids("the", "film", "was", "great", "!")
    assert tokenizer(["zxq"])[0] == ids("z", "##x", "##q")
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": False}, f)
    cased = load_tokenizer(folder)
    assert cased(["The film"])[0] == ids("[UNK]", "film")  # "The" is not in the vocabulary
