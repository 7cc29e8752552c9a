import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.translation_util import PAIRS, overfit, tiny_translator
from trainer_module.preprocessing import local, translation
from trainer_module.preprocessing.translation import (SOURCE_VOCABULARY, TARGET_VOCABULARY,
                                                      vocabulary_tokens)
from trainer_module.serving.translator import export_translator

FEATURE_SPEC = {"source": tf.io.FixedLenFeature([], tf.string),
                "target": tf.io.FixedLenFeature([], tf.string)}
CONFIG = {"source_vocab_size": 100, "target_vocab_size": 100, "min_frequency": 1,
          "shared_vocabulary": False, "max_source_length": 10, "max_target_length": 10}


def example(source: str, target: str = None) -> bytes:
    def text(value):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))

    feature = {"source": text(source)}
    if target is not None:
        feature["target"] = text(target)
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(transformed rows, TFTransformOutput, a tiny translator overfitted to PAIRS)."""
    rows = [{"source": s, "target": t} for s, t in PAIRS]
    transformed, output = local.analyze_and_transform(
        rows, translation.preprocessing_fn, CONFIG,
        str(tmp_path_factory.mktemp("transform")), FEATURE_SPEC)
    model = tiny_translator(len(vocabulary_tokens(output, SOURCE_VOCABULARY)),
                            len(vocabulary_tokens(output, TARGET_VOCABULARY)))
    accuracy = overfit(model, [r["source_ids"] for r in transformed],
                       [r["decoder_input_ids"] for r in transformed],
                       [r["target_ids"] for r in transformed])
    assert accuracy == 1.0
    return transformed, output, model


def test_exported_translator_translates_raw_strings_with_plain_tensorflow(trained, tmp_path):
    transformed, output, model = trained
    for beam_width in (1, 3):
        export_dir = str(tmp_path / f"export_{beam_width}")
        export_translator(model, output, export_dir, max_decode_length=9, beam_width=beam_width)

        loaded = tf.saved_model.load(export_dir)
        assert {"serving_default", "translate", "transform_features"} <= set(loaded.signatures)
        sources = [s for s, _ in PAIRS]
        result = loaded.signatures["translate"](source=tf.constant(sources))
        # Lower-cased and tokenized as in training, [START]/[END] and padding removed.
        assert [t.decode() for t in result["translation"].numpy()] == [
            "a man is running .", "a woman is sitting .", "two dogs are playing in the park .",
            "a child is laughing ."]
        ids = result["token_ids"].numpy()
        assert ids.shape == (4, 9)
        assert ids[0].tolist()[:6] == [r for r in transformed[0]["target_ids"][:6]]  # ... [END]

    # A fresh process with TensorFlow alone (no project code, no KerasHub) translates too.
    script = ("import json, sys, tensorflow as tf; m = tf.saved_model.load(sys.argv[1]); "
              "out = m.signatures['translate'](source=tf.constant([sys.argv[2]])); "
              "print(json.dumps([t.decode() for t in out['translation'].numpy()]))")
    fresh = subprocess.run([sys.executable, "-c", script, export_dir, PAIRS[3][0]],
                           capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    assert json.loads(fresh.stdout.strip().splitlines()[-1]) == ["a child is laughing ."]

    # tf.Examples, with and without a target: the same translation; teacher-forced counts
    # only where there is a target.
    served = loaded.signatures["serving_default"](
        examples=tf.constant([example(PAIRS[0][0], PAIRS[0][1]), example(PAIRS[1][0])]))
    assert served["translation"].numpy().tolist() == [b"a man is running .",
                                                      b"a woman is sitting ."]
    assert served["target_tokens"].numpy().tolist() == [6.0, 0.0]  # 5 words + [END]
    assert served["correct_tokens"].numpy().tolist() == [6.0, 0.0]
    reference = loaded.signatures["transform_features"](
        examples=tf.constant([example(*PAIRS[2])]))["reference"].numpy()
    assert reference.tolist() == [b"two dogs are playing in the park ."]


def test_attention_signature_aligns_each_generated_token_with_the_source(trained, tmp_path):
    _, output, model = trained
    export_translator(model, output, str(tmp_path / "export"), max_decode_length=9, beam_width=1)
    result = tf.saved_model.load(str(tmp_path / "export")).signatures["attention"](
        source=tf.constant([PAIRS[0][0], PAIRS[2][0]]))
    def text(tokens):
        return np.vectorize(lambda t: t.decode())(tokens.numpy())

    source, target = text(result["source_tokens"]), text(result["target_tokens"])
    source_mask, target_mask = result["source_mask"].numpy(), result["target_mask"].numpy()
    assert source[0][source_mask[0]].tolist() == ["ein", "mann", "läuft", "."]
    assert target[0][target_mask[0]].tolist() == ["a", "man", "is", "running", ".", "[END]"]
    assert target[1][target_mask[1]].tolist()[:2] == ["two", "dogs"]
    weights = result["cross_attention"].numpy()
    assert weights.shape == (2, 1, 2, 9, 10)  # (batch, decoder layers, heads, target, source)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
    assert np.all(weights[0, ..., ~source_mask[0]] < 1e-6)  # padding gets no attention


def test_decoding_stops_at_the_maximum_length(trained, tmp_path):
    _, output, model = trained
    export_translator(model, output, str(tmp_path / "export"), max_decode_length=3, beam_width=1)
    result = tf.saved_model.load(str(tmp_path / "export")).signatures["translate"](
        source=tf.constant([PAIRS[2][0]]))
    assert result["translation"].numpy().tolist() == [b"two dogs are"]
    assert np.all(result["token_ids"].numpy() != 3)  # cut before [END]
