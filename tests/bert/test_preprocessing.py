import os

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from lab.local_transform import analyze_and_transform
from lab.tiny_bert import VOCABULARY
from tests.conftest import review_spec
from tests.preprocessing.test_ngrams import hashed
from trainer_module.bert import preprocessing as bert

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


def test_long_reviews_keep_their_first_and_last_pieces(bert_run):
    """Through the session's BERT run's transform graph (the preprocessing_fn as Transform
    saved it and serving embeds it): 16 ids, a head of 4, the tiny preset's wide path."""
    texts = [
        "The movie was GREAT, I loved the cast and the music. Boring ending, dull plot!",
        "Dull film",
    ]
    outputs = bert_run.output.transform_raw_features(
        {"text": tf.constant(texts), "label": tf.constant([1, 0], tf.int64)}
    )
    transformed = [
        {name: outputs[name][i].numpy() for name in ("token_ids", "padding_mask", "ngram_ids")}
        for i in range(len(texts))
    ]

    def vocab(*tokens):
        return [VOCABULARY.index(t) for t in tokens]

    # 14 pieces fit: the first 4 and the last 10 of the review's 19.
    assert transformed[0]["token_ids"].tolist() == vocab(
        "[CLS]", "the", "movie", "was", "great", "and", "the", "music", ".", "boring",
        "ending", ",", "dull", "plot", "!", "[SEP]",
    )  # fmt: skip
    assert (
        transformed[1]["token_ids"].tolist()
        == vocab("[CLS]", "dull", "film", "[SEP]") + vocab("[PAD]") * 12
    )
    assert transformed[1]["padding_mask"].tolist() == [1] * 4 + [0] * 12
    # The wide path's n-grams come from the whole review's words, not the kept pieces.
    ngrams = hashed(["dull", "film", "dull film"], 256)
    assert transformed[1]["ngram_ids"].tolist() == ngrams + [0] * 29
    dropped = hashed(["cast", "loved the"], 256)  # from the middle that truncation left out
    assert set(dropped) <= set(transformed[0]["ngram_ids"].tolist())
