import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.layers.test_ngram import TinyWideAndDeep
from trainer_module.layers.ngram import PathTraining
from trainer_module.text_encoder.config import PRESETS
from trainer_module.training import wide_path


def rows_dataset(ngram_ids: np.ndarray, labels: np.ndarray, batch_size: int, classes: int = 2):
    inputs = {"features": np.ones((len(labels), 4), "float32"), "ngram_ids": ngram_ids}
    onehot = np.eye(classes, dtype="float32")[labels]
    return tf.data.Dataset.from_tensor_slices((inputs, onehot)).batch(batch_size)


def compiled_for_training(ids: np.ndarray, classes: int = 2) -> PathTraining:
    """A tiny wide-and-deep model with 64 n-gram buckets, compiled and built as the Trainer
    has it when the wide path trains: its n-gram layer frozen, each path reported."""
    classifier = TinyWideAndDeep(classes)
    classifier.init_wide_path(64, classes)
    classifier.ngram_logit.trainable = False
    model = PathTraining(classifier)
    model.compile(
        optimizer="sgd",
        loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )
    model({"features": np.ones((1, 4), "float32"), "ngram_ids": ids[:1]})
    return model


def test_the_held_out_slice_is_a_stable_share_of_the_reviews_whatever_their_order():
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 10_000, size=(2_000, 24)).astype("int64")
    labels = rng.integers(0, 2, size=2_000)

    def keys(dataset):
        return {
            tuple(row[:4])
            for inputs, _ in dataset.as_numpy_iterator()
            for row in inputs["ngram_ids"]
        }

    held = keys(wide_path.split(rows_dataset(ids, labels, 32), 10, 32, holdout=True))
    rest = keys(wide_path.split(rows_dataset(ids, labels, 32), 10, 32, holdout=False))
    order = rng.permutation(2_000)
    shuffled = keys(wide_path.split(rows_dataset(ids[order], labels[order], 7), 10, 32, True))
    assert held == shuffled and not held & rest
    assert 140 < len(held) < 260  # about 10% of 2,000
    assert len(held) + len(rest) > 2_000 - 32  # the rest drops its last partial batch only


def test_logistic_regression_matches_scikit_learn_and_is_calibrated():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 3_000)
    # Evidence on very different scales, far from the prior (1, 1, 0).
    features = np.stack(
        [
            40 * ((2 * labels - 1) * 1.5 + rng.normal(0, 2, 3_000)),
            30 * ((2 * labels - 1) + rng.normal(0, 1.5, 3_000)) - 20,
        ],
        axis=1,
    )
    weights = wide_path.logistic_regression(features, labels, prior=np.ones(2), l2=1e-6)
    reference = LogisticRegression(C=1e6, max_iter=1000).fit(features, labels)
    np.testing.assert_allclose(weights[:2], reference.coef_[0], rtol=1e-3)
    assert weights[2] == pytest.approx(reference.intercept_[0], rel=1e-3)
    predictions = 1 / (1 + np.exp(-(features @ weights[:2] + weights[2])))
    assert predictions.mean() == pytest.approx(labels.mean(), abs=1e-6)


def test_logistic_regression_stays_near_the_prior_on_a_few_separable_reviews():
    features = np.array([[10.0, 12.0], [-9.0, -11.0], [8.0, 9.0]])
    weights = wide_path.logistic_regression(features, np.array([1, 0, 1]), prior=np.ones(2))
    np.testing.assert_allclose(weights[:2], [1.0, 1.0], atol=1e-3)
    assert np.isfinite(weights).all()


def test_the_wide_path_trains_alone_then_the_combination_is_fitted_on_held_out_reviews():
    # Ids 1-10 mark positive reviews, 11-20 negative ones; the deep path sees nothing useful.
    rng = np.random.default_rng(0)
    n = 2_000
    labels = rng.integers(0, 2, n)
    ids = np.where(labels[:, None] == 1, rng.integers(1, 11, (n, 6)), rng.integers(11, 21, (n, 6)))
    ids = np.concatenate([ids, rng.integers(21, 60, (n, 10))], axis=1).astype("int64")
    config = PRESETS["tiny"].replace(ngram_buckets=64, ngram_epochs=3, ngram_learning_rate=0.3)
    model = compiled_for_training(ids)
    counts = np.stack([np.bincount(ids[labels == c].ravel(), minlength=65) for c in (0, 1)])
    from trainer_module.preprocessing.ngrams import naive_bayes_ratios

    def datasets(shuffle, epochs=None):
        data = rows_dataset(ids, labels, config.batch_size)
        return data if epochs == 1 else data.repeat()

    record = wide_path.train_and_combine(
        model, config, datasets, rows_dataset(ids, labels, 50), 8, n, naive_bayes_ratios(counts)
    )
    assert record["validation"]["wide_accuracy"] > 0.95
    assert record["validation"]["accuracy"] > 0.95
    assert not model.classifier.ngram_logit.trainable
    combination = record["combination"]
    assert 140 < combination["holdout_examples"] < 260
    deep_weight, wide_weight, _ = combination["weights"]
    assert abs(wide_weight) > abs(deep_weight)  # the informative path carries the weight
    assert combination["holdout_mean_prediction"] == pytest.approx(
        combination["holdout_mean_label"], abs=1e-3
    )


def test_a_handful_of_held_out_reviews_fits_no_combination():
    model = TinyWideAndDeep()
    model.combination.build((None, 2))
    model.combination.weighting.assign([3.0, -1.0, 2.0])  # as a warm start might load them
    ids = np.ones((40, 16), "int64")
    record = wide_path.fit_combination(PathTraining(model), rows_dataset(ids, np.arange(40) % 2, 8))
    assert record == {"holdout_examples": 40, "weights": [1.0, 1.0, 0.0]}
    np.testing.assert_allclose(model.combination.weighting.numpy(), [1.0, 1.0, 0.0])


def test_the_softmax_regression_finds_the_optimum_and_keeps_both_weights_at_least_zero():
    from scipy.optimize import minimize

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, 3_000)
    onehot = np.eye(4)[labels]
    deep = 3 * onehot + rng.normal(0, 1.5, (3_000, 4))
    wide = 2 * onehot + rng.normal(0, 2.0, (3_000, 4)) + [0.5, 0, 0, -0.5]
    weights = wide_path.softmax_regression(deep, wide, labels, l2=1e-6)
    # The softmax regression on the two paths' logits, weights tied across classes, unpenalized:
    # its optimum, found by another solver (intercepts are defined up to a constant).
    features = np.stack([deep, wide], axis=2)  # (N, C, 2)

    def loss(w):
        logits = features @ w[:2] + w[2:]
        return -(onehot * (logits - np.log(np.exp(logits).sum(1, keepdims=True)))).sum()

    reference = minimize(loss, np.zeros(6), method="BFGS").x
    np.testing.assert_allclose(weights[:2], reference[:2], rtol=1e-3)
    np.testing.assert_allclose(np.diff(weights[2:]), np.diff(reference[2:]), atol=1e-3)
    against = wide_path.softmax_regression(deep, -wide, labels)  # a path against its evidence
    assert against[1] == 0.0 and against[0] > 0


def test_above_two_classes_the_one_vs_rest_wide_path_trains_and_the_combination_is_fitted():
    from trainer_module.preprocessing.ngrams import naive_bayes_ratios

    # Ids 1-10 mark class 0, 11-20 class 1, and so on; the deep path sees nothing useful.
    rng = np.random.default_rng(0)
    n, classes = 2_000, 4
    labels = rng.integers(0, classes, n)
    ids = 1 + 10 * labels[:, None] + rng.integers(0, 10, (n, 6))
    ids = np.concatenate([ids, rng.integers(41, 60, (n, 10))], axis=1).astype("int64")
    config = PRESETS["tiny"].replace(
        num_classes=classes, ngram_buckets=64, ngram_epochs=3, ngram_learning_rate=0.3
    )
    model = compiled_for_training(ids, classes)
    counts = np.stack([np.bincount(ids[labels == c].ravel(), minlength=65) for c in range(4)])

    def datasets(shuffle, epochs=None):
        data = rows_dataset(ids, labels, config.batch_size, classes)
        return data if epochs == 1 else data.repeat()

    record = wide_path.train_and_combine(
        model,
        config,
        datasets,
        rows_dataset(ids, labels, 50, classes),
        8,
        n,
        naive_bayes_ratios(counts),
    )
    assert record["validation"]["wide_accuracy"] > 0.95
    assert record["validation"]["accuracy"] > 0.95
    combination = record["combination"]
    assert 140 < combination["holdout_examples"] < 260
    assert len(combination["weights"]) == 2 + classes  # deep, wide, an intercept per class
    deep_weight, wide_weight = combination["weights"][:2]
    assert wide_weight > deep_weight >= 0  # the informative path carries the weight
    assert combination["holdout_accuracy"] > 0.95
    served = keras.ops.convert_to_numpy(
        model.classifier(next(iter(rows_dataset(ids, labels, 64, 4)))[0])
    )
    assert served.shape == (64, classes)
