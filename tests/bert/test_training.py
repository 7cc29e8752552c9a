"""BERT's training batches (trainer_module/bert/training.py)."""

import numpy as np
import tensorflow as tf

from trainer_module.bert.config import PRESETS
from trainer_module.bert.training import grouped_by_length, padded_lengths


def reviews(lengths, width=16):
    mask = np.array([[1] * n + [0] * (width - n) for n in lengths], "int32")
    inputs = {
        "token_ids": mask * 5,
        "segment_ids": mask * 0,
        "padding_mask": mask,
        "ngram_ids": np.arange(len(lengths))[:, None] * np.ones((1, 3), "int32"),
    }
    return tf.data.Dataset.from_tensor_slices((inputs, np.array(lengths)))


def test_training_batches_hold_one_length_bucket_each_cut_to_its_end():
    config = PRESETS["tiny"].replace(sequence_length=16, batch_size=2, length_multiple=4)
    lengths = [3, 9, 4, 12, 2, 10, 16, 1, 5, 11]
    grouped = grouped_by_length(reviews(lengths).batch(4), config)
    batches = [
        (x["ngram_ids"][:, 0].numpy().tolist(), x["token_ids"].shape[1], y.numpy().tolist())
        for x, y in grouped
    ]
    # Buckets of 4 pieces: pairs as they fill, in order; then each bucket's leftover.
    assert batches[:4] == [
        ([0, 2], 4, [3, 4]),
        ([1, 3], 12, [9, 12]),
        ([4, 7], 4, [2, 1]),
        ([5, 9], 12, [10, 11]),
    ]
    assert sorted(batches[4:]) == [([6], 16, [16]), ([8], 8, [5])]
    for x, y in grouped:  # the cut removes padding only
        assert np.all(x["padding_mask"].numpy().sum(axis=1) == y.numpy())
        assert x["ngram_ids"].shape[1] == 3


def test_padded_lengths_are_the_share_of_reviews_at_each_bucket_end():
    config = PRESETS["tiny"].replace(sequence_length=16, batch_size=2, length_multiple=4)
    lengths = [3, 9, 4, 12, 2, 10, 16, 1, 5, 11]
    assert padded_lengths(reviews(lengths).batch(3), config) == {
        4: 0.4,
        8: 0.1,
        12: 0.4,
        16: 0.1,
    }
    unbucketed = config.replace(length_multiple=0)
    assert padded_lengths(reviews(lengths).batch(3), unbucketed) == {16: 1.0}
