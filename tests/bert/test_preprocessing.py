import os

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import review_spec
from tests.preprocessing.test_ngrams import hashed
from trainer_module.bert import preprocessing as bert
from trainer_module.bert.tiny_preset import VOCABULARY, write_tiny_checkpoint
from trainer_module.preprocessing.local import analyze_and_transform

ROWS = [
    {"text": "The movie was GREAT!", "label": 1},
    {"text": "Boring.<br /><br />I hated it, truly awful acting and a dull plot", "label": 0},
    {"text": "zxq", "label": 1},
]


@pytest.fixture(scope="module")
def transformed(tiny_bert_preset, tmp_path_factory):
    """(transformed rows, TFTransformOutput) of ROWS, packed to 12 ids."""
    return analyze_and_transform(
        ROWS,
        bert.preprocessing_fn,
        {"backbone_preset": tiny_bert_preset, "sequence_length": 12},
        str(tmp_path_factory.mktemp("bert_transform")),
        review_spec(),
    )


def test_without_truncation_head_ids_match_the_presets_own_preprocessor(
    tiny_bert_preset, transformed
):
    transformed, output = transformed
    token_ids = np.array([row["token_ids"] for row in transformed])

    def vocab(*tokens):
        return [VOCABULARY.index(t) for t in tokens]

    cls, sep, pad = vocab("[CLS]", "[SEP]", "[PAD]")
    # Exact ids: lower-cased WordPieces between [CLS] and [SEP], then [PAD].
    assert (
        token_ids[0].tolist() == [cls, *vocab("the", "movie", "was", "great", "!"), sep] + [pad] * 5
    )
    assert token_ids[2].tolist() == [cls, *vocab("z", "##x", "##q"), sep] + [pad] * 7
    assert token_ids[1][-1] == sep and pad not in token_ids[1]  # truncated to 12, [SEP] kept

    # The same as KerasHub's BertTextClassifierPreprocessor, called directly (after the
    # `<br />` replacement that the preprocessing_fn does first).
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        keras_hub.models.BertTokenizer.from_preset(tiny_bert_preset), sequence_length=12
    )
    texts = [tf.strings.regex_replace(r["text"], r"<br\s*/?>", " ") for r in ROWS]
    direct = preprocessor(tf.stack(texts))
    np.testing.assert_array_equal(token_ids, direct["token_ids"])
    np.testing.assert_array_equal([r["segment_ids"] for r in transformed], direct["segment_ids"])
    np.testing.assert_array_equal(
        [r["padding_mask"] for r in transformed], np.asarray(direct["padding_mask"]).astype(int)
    )
    assert [r["label"] for r in transformed] == [1, 0, 1]


def test_vocabulary_is_an_asset_of_the_transform_graph(transformed):
    _, output = transformed
    path = output.vocabulary_file_by_name(bert.VOCABULARY_NAME)
    assert path.startswith(os.path.join(output.transform_savedmodel_dir, "assets"))
    with open(path, encoding="utf-8") as f:
        assert f.read().splitlines() == VOCABULARY


def test_long_reviews_keep_their_first_and_last_pieces(tmp_path):
    folder = write_tiny_checkpoint(
        str(tmp_path / "hf"), hidden_dim=8, intermediate_dim=16, max_sequence_length=64
    )
    rows = [
        {"text": "The movie was GREAT, I loved the cast. Boring ending!", "label": 1},
        {"text": "Dull film", "label": 0},
    ]
    transformed, _ = analyze_and_transform(
        rows,
        bert.preprocessing_fn,
        {
            "backbone_preset": folder,
            "sequence_length": 8,
            "truncation_head": 2,
            "ngram_buckets": 64,
            "max_ngrams": 4,
        },
        str(tmp_path / "transform"),
        review_spec(),
    )

    def vocab(*tokens):
        return [VOCABULARY.index(t) for t in tokens]

    # 6 pieces fit: the first 2 and the last 4 of the review's 14.
    assert transformed[0]["token_ids"].tolist() == vocab(
        "[CLS]", "the", "movie", ".", "boring", "ending", "!", "[SEP]"
    )
    assert transformed[1]["token_ids"].tolist() == vocab(
        "[CLS]", "dull", "film", "[SEP]", "[PAD]", "[PAD]", "[PAD]", "[PAD]"
    )
    assert transformed[1]["padding_mask"].tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
    # The wide path's n-grams come from the whole review's words, not the kept pieces.
    assert transformed[1]["ngram_ids"].tolist() == hashed(["dull", "film", "dull film"], 64) + [0]
    assert (transformed[0]["ngram_ids"] > 0).all()
