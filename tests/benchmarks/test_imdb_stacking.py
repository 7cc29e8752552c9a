import numpy as np
import pytest

from benchmarks import imdb_stacking
from trainer_module.preprocessing.ngrams import naive_bayes_ratios


def test_word_grams_lists_every_ngram_up_to_the_order():
    assert imdb_stacking.word_grams(3)(["not", "bad", "at"]) == [
        "not",
        "bad",
        "at",
        "not bad",
        "bad at",
        "not bad at",
    ]


def test_nb_scaling_uses_the_pipelines_ratios_and_unit_length_rows():
    tokens = [["good", "film"], ["good", "good"], ["bad", "film"], ["bad"]]
    labels = np.array([1, 1, 0, 0])
    fit, other = imdb_stacking.features("word1", tokens, [["good", "bad"]])
    assert fit.toarray().max() == 1.0  # binarized: "good" twice in review 2 counts once
    vocabulary = ["bad", "film", "good"]  # CountVectorizer's sorted order
    counts = np.zeros((2, 4))
    for row, label in zip(tokens, labels):
        for word in set(row):
            counts[label, 1 + vocabulary.index(word)] += 1
    ratios = naive_bayes_ratios(counts)[1:]  # the pipeline's analyzer, without padding
    scaled, scaled_other = imdb_stacking.nb_scaled(fit, labels, other)
    np.testing.assert_allclose(scaled.toarray(), fit.toarray() * ratios, rtol=1e-5)
    np.testing.assert_allclose(scaled_other.toarray(), [[ratios[0], 0, ratios[2]]], rtol=1e-5)
    (unit,) = imdb_stacking.nb_scaled(fit, labels, unit_length=True)
    assert np.linalg.norm(unit.toarray(), axis=1) == pytest.approx(np.ones(4))


def test_character_grams_stay_within_words():
    fit, _ = imdb_stacking.features("char2-3", [["ab", "cd"]], [["ab"]])
    assert fit.shape[1] == 10  # " a", "ab", "b ", " ab", "ab ", and the same five for "cd"


def test_subsets_are_each_path_the_first_with_each_then_all():
    assert imdb_stacking.subsets(["w", "d", "c", "s"]) == [
        ("w",),
        ("d",),
        ("c",),
        ("s",),
        ("w", "d"),
        ("w", "c"),
        ("w", "s"),
        ("w", "d", "c"),
        ("w", "d", "s"),
        ("w", "d", "c", "s"),
    ]
