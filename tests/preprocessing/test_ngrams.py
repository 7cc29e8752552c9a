import numpy as np
import tensorflow as tf

from trainer_module.preprocessing.ngrams import distinct_ngram_ids, naive_bayes_ratios


def hashed(grams, buckets):
    return (tf.strings.to_hash_bucket_fast(grams, buckets) + 1).numpy().tolist()


def test_distinct_ngram_ids_are_each_reviews_unigrams_then_bigrams_once_in_order():
    tokens = tf.ragged.constant([["a", "b", "a", "b"], ["c"], []])
    ids = distinct_ngram_ids(tokens, buckets=1000, max_ngrams=6, order=2).numpy()
    # a b a b -> unigrams a, b (again a, b), bigrams "a b", "b a" ("a b" again).
    assert ids[0].tolist() == hashed(["a", "b", "a b", "b a"], 1000) + [0, 0]
    assert ids[1].tolist() == hashed(["c"], 1000) + [0] * 5
    assert ids[2].tolist() == [0] * 6
    assert distinct_ngram_ids(tokens, 1000, max_ngrams=3, order=2).numpy()[0].tolist() == hashed(
        ["a", "b", "a b"], 1000
    )  # the first max_ngrams kept


def test_distinct_ngram_ids_go_up_to_trigrams_by_default():
    tokens = tf.ragged.constant([["a", "b", "a", "b"]])
    ids = distinct_ngram_ids(tokens, buckets=1000, max_ngrams=8).numpy()
    # Trigrams "a b a" and "b a b" after the uni- and bigrams.
    expected = hashed(["a", "b", "a b", "b a", "a b a", "b a b"], 1000) + [0, 0]
    assert ids[0].tolist() == expected


def test_naive_bayes_ratios_are_smoothed_log_count_ratios_with_padding_at_zero():
    counts = np.array(
        [
            [7, 1, 0, 3],  # class 0: reviews holding ids 0..3
            [7, 3, 1, 0],  # class 1
        ]
    )
    p, q = np.array([4, 2, 1.0]), np.array([2, 1, 4.0])  # ids 1..3, smoothed
    expected = [0.0, *(np.log(p / p.sum()) - np.log(q / q.sum()))]
    np.testing.assert_allclose(naive_bayes_ratios(counts), expected, rtol=1e-6)


def test_above_two_classes_each_class_gets_its_ratios_against_the_rest():
    counts = np.array(
        [
            [9, 1, 0, 3],  # class 0: reviews holding ids 0..3
            [9, 3, 1, 0],  # class 1
            [9, 0, 2, 2],  # class 2
        ]
    )
    ratios = naive_bayes_ratios(counts)
    assert ratios.shape == (4, 3) and ratios.dtype == np.float32
    np.testing.assert_array_equal(ratios[0], [0, 0, 0])  # padding
    p, q = np.array([4, 2, 1.0]), np.array([2, 3, 6.0])  # class 1 against classes 0 and 2
    np.testing.assert_allclose(ratios[1:, 1], np.log(p / p.sum()) - np.log(q / q.sum()), rtol=1e-6)
