import numpy as np
import tensorflow as tf

from tests.conftest import review_spec
from tests.preprocessing.test_ngrams import hashed
from trainer_module.preprocessing.local import analyze_and_transform
from trainer_module.preprocessing.ngrams import ngram_counts
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


def test_ngram_ids_and_their_class_counts_come_out_of_transform(tmp_path):
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
            "max_ngrams": 8,
        },
        str(tmp_path),
        review_spec(),
    )
    ids = np.array([row["ngram_ids"] for row in transformed])
    assert ids.shape == (3, 8)
    assert ids[2].tolist() == hashed(["bad", "movie", "bad bad", "bad movie"], buckets) + [0] * 4
    counts = ngram_counts(output)
    assert counts.shape == (2, buckets + 1) and counts[:, 0].tolist() == [0, 0]
    great, movie, bad = hashed(["great", "movie", "bad"], buckets)
    # Reviews holding each word, by class (0, 1); "great" twice in one review counts once.
    assert counts[:, great].tolist() == [1, 1]
    assert counts[:, movie].tolist() == [2, 1]
    assert counts[:, bad].tolist() == [2, 0]
    assert counts.sum() == sum(len(set(row[row > 0])) for row in ids)
