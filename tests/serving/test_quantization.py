"""int8 exports (trainer_module/serving/quantization.py, `--set quantize=int8`): the Trainer
quantizes the trained model's matrix products before export; the SavedModel answers raw input
as the float32 export of the same training does.

Each int8 run trains as the session's float32 run of its family (the same rows, Transform
output, config and steps: training is deterministic on the CPU, so the float weights are the
same) and differs only in its export."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import (
    PAIRS,
    REVIEWS,
    TEXT_ENCODER_OVERRIDES,
    TRANSLATOR_OVERRIDES,
    TRANSLATOR_STEPS,
    pair_spec,
    review_spec,
)
from tests.family_util import run_family
from trainer_module.families import get_family
from trainer_module.serving.quantization import QUANTIZED_TYPES


def int8_variables(export_dir: str) -> int:
    """How many of the SavedModel's variables hold int8 values."""
    loaded = tf.saved_model.load(export_dir)
    return sum(v.dtype == tf.int8 for v in loaded.variables)


def history(run) -> dict:
    with open(os.path.join(run.fn_args.model_run_dir, "history.json")) as f:
        return json.load(f)


def test_an_int8_export_answers_raw_reviews_with_the_float32_exports_labels(
    text_encoder_run, tmp_path
):
    int8 = run_family(
        "text_encoder",
        REVIEWS,
        review_spec(),
        str(tmp_path),
        overrides={**TEXT_ENCODER_OVERRIDES, "quantize": "int8"},
        train_steps=30,
        mixed_precision="on",
        transform_of=text_encoder_run,
    )
    # Every matrix product of the encoder and the head: 4 attention and 2 feed-forward
    # projections per block, and the classifier.
    blocks = TEXT_ENCODER_OVERRIDES.get(
        "num_layers", get_family("text_encoder").config().num_layers
    )
    assert history(int8)["quantized_layers"] == 6 * blocks + 1
    assert "quantized_layers" not in history(text_encoder_run)
    assert int8_variables(int8.export_dir) == 6 * blocks + 1
    assert int8_variables(text_encoder_run.export_dir) == 0

    texts = [row["text"] for row in REVIEWS] + ["Great fun!", "awful, DULL plot"]
    answers = {}
    for name, run in (("float32", text_encoder_run), ("int8", int8)):
        loaded = tf.saved_model.load(run.export_dir)
        answers[name] = loaded.signatures["classify_text"](text=tf.constant(texts))
    assert answers["int8"]["probabilities"].dtype == tf.float32
    assert answers["int8"]["label"].numpy().tolist() == answers["float32"]["label"].numpy().tolist()
    np.testing.assert_allclose(
        answers["int8"]["probabilities"].numpy(), answers["float32"]["probabilities"], atol=0.05
    )
    # The same weights quantized, not the float32 model under another name.
    assert not np.array_equal(
        answers["int8"]["probabilities"].numpy(), answers["float32"]["probabilities"].numpy()
    )


@pytest.mark.slow  # 300 more training steps of the translator: about half a minute
def test_an_int8_translator_translates_raw_sentences_as_the_float32_one(translator_run, tmp_path):
    int8 = run_family(
        "translator",
        [{"source": s, "target": t} for s, t in PAIRS],
        pair_spec(),
        str(tmp_path),
        overrides={**TRANSLATOR_OVERRIDES, "quantize": "int8"},
        train_steps=TRANSLATOR_STEPS,
        eval_steps=1,
        transform_of=translator_run,
    )
    assert history(int8)["quantized_layers"] > 0
    assert int8_variables(int8.export_dir) == history(int8)["quantized_layers"]
    sources = tf.constant([s for s, _ in PAIRS])
    translations = {}
    for name, run in (("float32", translator_run), ("int8", int8)):
        loaded = tf.saved_model.load(run.export_dir)
        translations[name] = loaded.signatures["translate"](source=sources)["translation"]
    assert translations["int8"].numpy().tolist() == translations["float32"].numpy().tolist()


def test_only_dense_and_einsum_layers_are_quantized_and_an_unknown_mode_is_refused():
    import keras

    from trainer_module.layers import Dense

    assert set(QUANTIZED_TYPES) == {keras.layers.Dense, keras.layers.EinsumDense, Dense}
    for family in ("text_encoder", "bert", "translator"):
        with pytest.raises(ValueError, match=r"quantize must be one of \(None, 'int8'\)"):
            get_family(family).config(None, {"quantize": "int4"})
    with pytest.raises(ValueError, match=r"unknown VitConfig fields: \['quantize'\]"):
        get_family("vit").config(None, {"quantize": "int8"})
