import numpy as np
import pytest
import tensorflow as tf

from lab.local_transform import analyze_and_transform
from tests.conftest import review_spec
from tests.preprocessing.test_ngrams import hashed
from trainer_module.preprocessing.ngrams import held_out, ngram_ratios
from trainer_module.preprocessing.text import normalize, review_length_bucket, tokenize, truncate
from trainer_module.text_encoder.config import TextEncoderConfig
from trainer_module.text_encoder.preprocessing import (
    VOCABULARY_NAME,
    pad_ids,
    preprocessing_fn,
    vocabulary_size,
)


def test_normalize_lowercases_unicode_breaks_lines_and_splits_punctuation():
    out = normalize(tf.constant(["ÉMILE said:<br />GREAT!", "a<br/>b<br  />c"])).numpy()
    assert out[0].decode().split() == ["émile", "said", ":", "great", "!"]
    assert out[1].decode().split() == ["a", "b", "c"]


def test_length_buckets_count_tokens_before_truncation():
    texts = tf.constant(["word " * 5, "word " * 100, "word " * 260, "word " * 700])
    assert [b.decode() for b in review_length_bucket(tokenize(texts)).numpy()] == [
        "0-99",
        "100-249",
        "250-499",
        "500+",
    ]


def test_head_and_tail_truncation_keeps_both_ends():
    ids = tf.ragged.constant([list(range(10)), [0, 1, 2], []], dtype=tf.int64)
    kept = truncate(ids, max_length=5, head=2).to_list()
    assert kept == [[0, 1, 7, 8, 9], [0, 1, 2], []]
    assert truncate(ids, 5, head=5).to_list()[0] == [0, 1, 2, 3, 4]
    assert truncate(ids, 5, head=0).to_list()[0] == [5, 6, 7, 8, 9]
    padded = pad_ids(truncate(ids, 5, head=2), 5).numpy()
    assert padded.tolist() == [[1, 2, 8, 9, 10], [1, 2, 3, 0, 0], [0, 0, 0, 0, 0]]


def test_exact_ids_padding_truncation_and_oov(tmp_path):
    rows = [
        {"text": "Great movie!", "label": 1},
        {"text": "great<br />MOVIE, great bad", "label": 0},
        {"text": "Café bad — great movie; great extra words", "label": 1},
    ]
    transformed, output = analyze_and_transform(
        rows,
        preprocessing_fn,
        {"vocab_size": 3, "max_length": 5, "truncation_head": 3},
        str(tmp_path),
        review_spec(),
    )
    # Vocabulary by frequency: great (5), movie (3), bad (2); ids start at 1, 0 pads and
    # every other word shares the OOV id 4.
    assert output.vocabulary_by_name(VOCABULARY_NAME) == [b"great", b"movie", b"bad"]
    ids = np.array([row["token_ids"] for row in transformed])
    np.testing.assert_array_equal(
        ids,
        [
            [1, 2, 4, 0, 0],  # great movie !
            [1, 2, 4, 1, 3],  # great movie , great bad
            [4, 3, 4, 4, 4],  # café bad — (great movie ; great) extra words: head 3, tail 2
        ],
    )
    assert ids.dtype == np.int64
    assert [row["label"] for row in transformed] == [1, 0, 1]
    assert [row["length_bucket"] for row in transformed] == [b"0-99"] * 3
    # The model embeds padding + 3 words + 1 OOV bucket.
    config = TextEncoderConfig().replace(vocab_size=vocabulary_size(output))
    assert config.embedding_rows == 5 == ids.max() + 1


@pytest.mark.parametrize("holdout_percent", [pytest.param(0, marks=pytest.mark.slow), 60])
def test_ngram_ids_and_their_naive_bayes_ratios_come_out_of_transform(tmp_path, holdout_percent):
    rows = [
        {"text": "Great movie!", "label": 1},
        {"text": "great<br />MOVIE, great bad", "label": 0},
        {"text": "bad bad movie", "label": 0},
    ]
    buckets = 4096
    transformed, output = analyze_and_transform(
        rows,
        preprocessing_fn,
        {
            "vocab_size": 3,
            "max_length": 5,
            "truncation_head": 3,
            "ngram_buckets": buckets,
            "ngram_order": 3,
            "max_ngrams": 16,
            "holdout_percent": holdout_percent,
        },
        str(tmp_path),
        review_spec(),
    )
    # Each review's distinct n-grams, by hand: unigrams, bigrams, trigrams, in order.
    grams = [
        ["great", "movie", "!", "great movie", "movie !", "great movie !"],
        ["great", "movie", ",", "bad", "great movie", "movie ,", ", great", "great bad"]
        + ["great movie ,", "movie , great", ", great bad"],
        ["bad", "movie", "bad bad", "bad movie", "bad bad movie"],
    ]
    ids = np.array([row["ngram_ids"] for row in transformed])
    for row, review in zip(ids, grams):
        assert row.tolist() == hashed(review, buckets) + [0] * (16 - len(review))
    # The analyzer's ratios, by hand: n1 and n0, the reviews of each class holding an id (but
    # the held-out ones); then log((1 + n1) / |1 + n1|) - log((1 + n0) / |1 + n0|), sums over
    # every bucket but 0.
    ratios = ngram_ratios(output)
    assert ratios.shape == (buckets + 1,) and ratios.dtype == np.float32 and ratios[0] == 0
    held = held_out(tf.constant(ids), holdout_percent).numpy().tolist()
    assert held == ([False] * 3 if holdout_percent == 0 else [True, False, True])
    n1, n0 = np.zeros(buckets + 1), np.zeros(buckets + 1)
    for review, label, out in zip(ids, (1, 0, 0), held):
        if not out:
            (n1 if label else n0)[review[review > 0]] += 1
    p, q = 1 + n1[1:], 1 + n0[1:]
    great, bad, great_movie = hashed(["great", "bad", "great movie"], buckets)
    if holdout_percent == 0:
        assert (n1[great], n0[great], n1[bad], n0[bad]) == (1, 1, 0, 2)
        assert ratios[great] == pytest.approx(np.log(2 / p.sum()) - np.log(2 / q.sum()), rel=1e-5)
        assert ratios[bad] == pytest.approx(np.log(1 / p.sum()) - np.log(3 / q.sum()), rel=1e-5)
    expected = np.log((1 + n1) / p.sum()) - np.log((1 + n0) / q.sum())
    expected[0] = 0
    np.testing.assert_allclose(ratios, expected, rtol=1e-5, atol=1e-6)
    assert ratios[great_movie] == ratios[great]  # always in the same reviews
