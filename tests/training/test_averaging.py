"""Checkpoint averaging (trainer_module/training/averaging.py): the model ends with the mean of
its weights after the last k evaluations, also when the training was killed and resumed from
its backup."""

import os

import keras
import numpy as np
import pytest

from trainer_module.training import averaging, backup


class Killed(Exception):
    pass


class Record(keras.callbacks.Callback):
    """The weights after each epoch; raises Killed after epoch `kill_after` (1-based)."""

    def __init__(self, kill_after=None):
        super().__init__()
        self.weights, self.kill_after = [], kill_after

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append([keras.ops.convert_to_numpy(w) for w in self.model.weights])
        if epoch + 1 == self.kill_after:
            raise Killed()


def model_and_data():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
    return model, x, x.sum(axis=1, keepdims=True)


def final_weights(model):
    return [keras.ops.convert_to_numpy(w) for w in model.weights]


def test_the_model_ends_with_the_mean_of_its_last_k_evaluations():
    model, x, y = model_and_data()
    record = Record()
    model.fit(x, y, epochs=4, batch_size=8, verbose=0, callbacks=[averaging.AverageLast(3), record])
    for i, weight in enumerate(final_weights(model)):
        expected = np.mean([snapshot[i] for snapshot in record.weights[-3:]], axis=0)
        np.testing.assert_allclose(weight, expected, rtol=1e-6)
        assert not np.allclose(weight, record.weights[-1][i])  # not the last weights


def test_one_evaluation_averages_nothing():
    assert averaging.callback(1, None) is None
    with pytest.raises(ValueError, match="average_last"):
        averaging.AverageLast(0)


def test_a_resumed_training_averages_the_snapshots_of_the_killed_run(tmp_path):
    """Killed after interval 3 of 4, then rerun: the rerun resumes from the backup and
    averages intervals 2 and 3 (written by the killed run) with its own 4th, and removes the
    snapshot of interval 1 once the average no longer needs it."""
    directory = str(tmp_path / "backup")

    def fit(record):
        model, x, y = model_and_data()
        restore = backup.Backup(directory)
        model.fit(
            x,
            y,
            epochs=4,
            batch_size=8,
            verbose=0,
            shuffle=False,
            callbacks=[averaging.callback(3, restore), restore, record],
        )
        return model

    killed = Record(kill_after=3)
    with pytest.raises(Killed):
        fit(killed)
    folder = os.path.join(directory, averaging.FOLDER)
    assert sorted(os.listdir(folder)) == [f"interval-{i}.npz" for i in (1, 2, 3)]

    resumed = Record()
    model = fit(resumed)
    assert len(resumed.weights) == 1  # only the 4th interval was trained again
    assert sorted(os.listdir(folder)) == [f"interval-{i}.npz" for i in (2, 3, 4)]
    snapshots = [*killed.weights[1:3], resumed.weights[0]]
    for i, weight in enumerate(final_weights(model)):
        expected = np.mean([snapshot[i] for snapshot in snapshots], axis=0)
        np.testing.assert_allclose(weight, expected, rtol=1e-6)
