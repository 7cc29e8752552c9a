import numpy as np
import pytest

from benchmarks import imdb_recipes
from trainer_module.text_encoder.config import PRESETS

SHAPE = dict(vocab_size=20, max_length=6, truncation_head=2, d_model=8, num_heads=2, ff_dim=16)


def corpus(reviews=16):
    words = [["good", "fine", "great"], ["bad", "dull", "poor"]]
    rng = np.random.default_rng(0)
    labels = np.arange(reviews) % 2
    tokens = [list(rng.choice(words[1 - label], size=8)) for label in labels]
    return {split: (tokens, labels.astype(np.int32)) for split in ("train", "selection", "val")}


def test_encode_ranks_words_and_keeps_the_head_and_the_tail():
    data = {"train": ([["a", "b", "a", "c", "d", "e", "f", "g"]], np.array([1]))}
    encoded, kept = imdb_recipes.encode(data, PRESETS["small"].replace(**SHAPE))
    assert kept == 7  # every word of a training split smaller than vocab_size
    ids, _ = encoded["train"]
    # "a", seen twice, is id 1, the others by first appearance; two words from the head
    # (a b), four from the tail (d e f g).
    assert ids.tolist() == [[1, 2, 4, 5, 6, 7]]


def test_a_recipe_with_the_wide_path_is_refused_before_training():
    # The encoder trains alone here: the pipeline trains the wide path apart, after it.
    with pytest.raises(ValueError, match="encoder alone"):
        imdb_recipes.run("small", {"ngram_buckets": 64}, corpus(), 1, 0)
