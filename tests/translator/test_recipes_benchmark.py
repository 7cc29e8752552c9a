"""benchmarks/translation_recipes.py trains on the ids Transform would make, batched as the
Trainer batches them."""

import numpy as np
import tensorflow as tf

from benchmarks import translation_recipes as recipes
from trainer_module.translator.config import BATCH_LENGTH_BOUNDARIES, LENGTH_MULTIPLE
from trainer_module.translator.preprocessing import pad, shift_target


def test_model_arrays_are_preprocessings_padded_and_shifted_ids():
    rows = [[5, 6, 7], [8], list(range(10, 60))]  # the last is cut to the 40-token limit
    de = en = np.array([r[:41] + [0] * (41 - len(r[:41])) for r in rows])
    source, decoder, target = recipes.model_arrays(de, en)
    ragged = tf.ragged.constant(rows, dtype=tf.int64)
    want_decoder, want_target = shift_target(ragged, recipes.MAX_LENGTH)
    np.testing.assert_array_equal(source, pad(ragged, recipes.MAX_LENGTH).numpy())
    np.testing.assert_array_equal(decoder, want_decoder.numpy())
    np.testing.assert_array_equal(target, want_target.numpy())


def test_batches_hold_one_length_bucket_trimmed_to_its_longest():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, size=600)
    ids = np.array([[4] * n + [0] * (recipes.MAX_LENGTH - n) for n in lengths])
    stream = recipes.batches(ids, ids, ids, batch_size=16, seed=0)
    for _ in range(60):  # more than one pass over the 600 rows
        source, decoder, target = next(stream)
        used = (source > 0).sum(1)
        assert len(source) == 16 and source.shape == decoder.shape == target.shape
        groups = np.searchsorted(BATCH_LENGTH_BOUNDARIES, used, side="right")
        assert len(set(groups)) == 1
        assert source.shape[1] == -(-used.max() // LENGTH_MULTIPLE) * LENGTH_MULTIPLE
    untrimmed = recipes.batches(ids, ids, ids, batch_size=16, seed=0, trim=False)
    assert {next(untrimmed)[0].shape for _ in range(20)} == {(16, recipes.MAX_LENGTH)}
