import tensorflow as tf

from trainer_module.preprocessing.ngrams import distinct_ngram_ids


def hashed(grams, buckets):
    return (tf.strings.to_hash_bucket_fast(grams, buckets) + 1).numpy().tolist()


def test_distinct_ngram_ids_are_each_reviews_unigrams_then_bigrams_once_in_order():
    tokens = tf.ragged.constant([["a", "b", "a", "b"], ["c"], []])
    ids = distinct_ngram_ids(tokens, buckets=1000, max_ngrams=6).numpy()
    # a b a b -> unigrams a, b (again a, b), bigrams "a b", "b a" ("a b" again).
    assert ids[0].tolist() == hashed(["a", "b", "a b", "b a"], 1000) + [0, 0]
    assert ids[1].tolist() == hashed(["c"], 1000) + [0] * 5
    assert ids[2].tolist() == [0] * 6
    assert distinct_ngram_ids(tokens, 1000, max_ngrams=3).numpy()[0].tolist() == hashed(
        ["a", "b", "a b"], 1000
    )  # the first max_ngrams kept
