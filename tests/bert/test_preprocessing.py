import os

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import review_spec
from trainer_module.bert import preprocessing as bert
from trainer_module.bert.tiny_preset import VOCABULARY
from trainer_module.preprocessing.local import analyze_and_transform

ROWS = [{"text": "The movie was GREAT!", "label": 1},
        {"text": "Boring.<br /><br />I hated it, truly awful acting and a dull plot", "label": 0},
        {"text": "zxq", "label": 1}]


@pytest.fixture(scope="module")
def transformed(tiny_bert_preset, tmp_path_factory):
    """(transformed rows, TFTransformOutput) of ROWS, packed to 12 ids."""
    return analyze_and_transform(
        ROWS, bert.preprocessing_fn, {"backbone_preset": tiny_bert_preset, "sequence_length": 12},
        str(tmp_path_factory.mktemp("bert_transform")), review_spec())


def test_ids_match_the_presets_own_preprocessor(tiny_bert_preset, transformed):
    transformed, output = transformed
    token_ids = np.array([row["token_ids"] for row in transformed])

    def vocab(*tokens):
        return [VOCABULARY.index(t) for t in tokens]

    cls, sep, pad = vocab("[CLS]", "[SEP]", "[PAD]")
    # Exact ids: lower-cased WordPieces between [CLS] and [SEP], then [PAD].
    assert token_ids[0].tolist() == [cls, *vocab("the", "movie", "was", "great", "!"), sep] + [pad] * 5
    assert token_ids[2].tolist() == [cls, *vocab("z", "##x", "##q"), sep] + [pad] * 7
    assert token_ids[1][-1] == sep and pad not in token_ids[1]  # truncated to 12, [SEP] kept

    # The same as KerasHub's BertTextClassifierPreprocessor, called directly (after the
    # `<br />` replacement that the preprocessing_fn does first).
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        keras_hub.models.BertTokenizer.from_preset(tiny_bert_preset), sequence_length=12)
    texts = [tf.strings.regex_replace(r["text"], r"<br\s*/?>", " ") for r in ROWS]
    direct = preprocessor(tf.stack(texts))
    np.testing.assert_array_equal(token_ids, direct["token_ids"])
    np.testing.assert_array_equal([r["segment_ids"] for r in transformed], direct["segment_ids"])
    np.testing.assert_array_equal([r["padding_mask"] for r in transformed],
                                  np.asarray(direct["padding_mask"]).astype(int))
    assert [r["label"] for r in transformed] == [1, 0, 1]


def test_vocabulary_is_an_asset_of_the_transform_graph(transformed):
    _, output = transformed
    path = output.vocabulary_file_by_name(bert.VOCABULARY_NAME)
    assert path.startswith(os.path.join(output.transform_savedmodel_dir, "assets"))
    with open(path, encoding="utf-8") as f:
        assert f.read().splitlines() == VOCABULARY
