"""The Tuner's progress labels: KerasTuner's copies of the callback count one search's trials
together, and each search counts from one."""

import copy

from trainer_module.training.tuning import TrialProgress


def labels_of(search: TrialProgress, trials: int) -> list:
    labels = []
    for _ in range(trials):
        trial = copy.deepcopy(search)  # as KerasTuner copies the callbacks for each trial
        trial.on_train_begin()
        labels.append(trial.label)
    return labels


def test_each_search_counts_its_trials_from_one_across_keras_tuners_copies():
    assert labels_of(TrialProgress(2, 10, 8, interval=3600), 2) == ["trial 1/2", "trial 2/2"]
    # A second search in the same process (the tests', or a notebook's) starts again.
    assert labels_of(TrialProgress(3, 10, 8, interval=3600), 1) == ["trial 1/3"]
