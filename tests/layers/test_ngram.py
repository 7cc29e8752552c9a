import keras
import numpy as np
import pytest
from keras import ops

from trainer_module.layers import NgramLogit, PathCombination, WideAndDeep
from trainer_module.layers.ngram import PathTraining, classifier_of, training_model


def test_ngram_logit_sums_ratio_times_coefficient_over_the_ids_plus_its_bias():
    layer = NgramLogit(4)
    layer.build((None, 3))
    layer.set_ratios([0.0, 1.0, -2.0, 0.5, 3.0])
    layer.coefficients.assign([9.0, 2.0, 1.0, 4.0, 0.0])
    layer.bias.assign(0.25)
    ids = np.array([[1, 2, 0], [3, 3, 0], [0, 0, 0]])
    out = ops.convert_to_numpy(layer(ids))
    np.testing.assert_allclose(out, [1 * 2 - 2 * 1 + 0.25, 2 * 0.5 * 4 + 0.25, 0.25])


def test_ngram_logit_refuses_ratios_of_another_size():
    layer = NgramLogit(4)
    layer.build((None, 3))
    with pytest.raises(ValueError, match=r"4 buckets and 2 classes take ratios of shape \(5,\)"):
        layer.set_ratios(np.zeros(9))
    three = NgramLogit(4, classes=3)
    three.build((None, 3))
    with pytest.raises(ValueError, match=r"shape \(5, 3\), not \(5,\)"):
        three.set_ratios(np.zeros(5))


def test_above_two_classes_each_class_has_its_own_regression_against_the_rest():
    layer = NgramLogit(4, classes=3)
    layer.build((None, 3))
    ratios = np.arange(15, dtype="float32").reshape(5, 3) / 10
    ratios[0] = 0  # padding
    layer.set_ratios(ratios)
    coefficients = np.linspace(-1, 1, 15, dtype="float32").reshape(5, 3)
    layer.coefficients.assign(coefficients)
    layer.bias.assign([0.1, 0.2, 0.3])
    ids = np.array([[1, 2, 0], [4, 0, 0]])
    out = ops.convert_to_numpy(layer(ids))
    assert out.shape == (2, 3)
    expected = [
        (ratios[[1, 2]] * coefficients[[1, 2]]).sum(axis=0) + [0.1, 0.2, 0.3],
        ratios[4] * coefficients[4] + [0.1, 0.2, 0.3],
    ]
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_path_combination_starts_as_the_sum_and_applies_its_weights():
    combination = PathCombination()
    deep = np.array([[0.5, 2.0], [1.0, -1.0]], "float32")  # evidence 1.5, -2.0
    wide = np.array([1.0, 0.5], "float32")
    out = ops.convert_to_numpy(combination(deep, wide))
    np.testing.assert_allclose(out[:, 1] - out[:, 0], [2.5, -1.5])  # 1 x deep + 1 x wide
    np.testing.assert_allclose(out.sum(axis=1), [0.0, 0.0])  # split evenly
    combination.weighting.assign([2.0, 0.5, -1.0])
    out = ops.convert_to_numpy(combination(deep, wide))
    np.testing.assert_allclose(out[:, 1] - out[:, 0], [2 * 1.5 + 0.5 - 1, 2 * -2.0 + 0.25 - 1])


def test_above_two_classes_the_combination_weighs_both_paths_logits_with_an_intercept_each():
    combination = PathCombination(classes=3)
    deep = np.array([[0.5, 2.0, -1.0]], "float32")
    wide = np.array([[1.0, 0.5, 0.0]], "float32")
    np.testing.assert_allclose(ops.convert_to_numpy(combination(deep, wide)), deep + wide)
    combination.weighting.assign([2.0, 0.5, 0.1, 0.2, 0.3])
    np.testing.assert_allclose(
        ops.convert_to_numpy(combination(deep, wide)), 2 * deep + 0.5 * wide + [0.1, 0.2, 0.3]
    )


class TinyWideAndDeep(WideAndDeep, keras.Model):
    def __init__(self, classes=2):
        super().__init__()
        self.head = keras.layers.Dense(classes)
        self.init_wide_path(8, classes)

    def deep_logits(self, inputs, training=None):
        return self.head(inputs["features"])


def test_wide_and_deep_answers_the_combination_and_its_path_logits_each_path():
    model = TinyWideAndDeep()
    inputs = {"features": np.ones((3, 4), "float32"), "ngram_ids": np.ones((3, 5), "int32")}
    assert tuple(model(inputs).shape) == (3, 2)  # served: the combination
    assert tuple(model.path_logits(inputs).shape) == (3, 3, 2)  # combination, deep, wide
    model.ngram_logit.set_ratios(np.full(9, 0.5))
    model.ngram_logit.coefficients.assign(np.ones(9, "float32"))
    paths = ops.convert_to_numpy(model.path_logits(inputs))
    np.testing.assert_allclose(paths[:, 2, 1] - paths[:, 2, 0], [2.5] * 3)  # 5 ids x 0.5
    evidence = paths[:, :, 1] - paths[:, :, 0]  # (B, path)
    np.testing.assert_allclose(evidence[:, 0], evidence[:, 1] + evidence[:, 2], rtol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(model(inputs)), paths[:, 0], rtol=1e-6)
    np.testing.assert_allclose(
        ops.convert_to_numpy(model.deep_logits(inputs)), paths[:, 1], rtol=1e-6
    )
    with pytest.raises(ValueError, match="a dict with ngram_ids"):
        model({"features": inputs["features"]})


def test_above_two_classes_the_paths_are_each_paths_logits_and_served_is_their_combination():
    model = TinyWideAndDeep(classes=4)
    inputs = {"features": np.ones((3, 4), "float32"), "ngram_ids": np.ones((3, 5), "int32")}
    assert tuple(model(inputs).shape) == (3, 4)
    model.ngram_logit.set_ratios(np.full((9, 4), 0.5))
    model.ngram_logit.coefficients.assign(np.tile([1.0, 2.0, 0.0, -1.0], (9, 1)))
    paths = ops.convert_to_numpy(model.path_logits(inputs))
    assert paths.shape == (3, 3, 4)
    np.testing.assert_allclose(paths[:, 2], [[2.5, 5.0, 0.0, -2.5]] * 3)  # 5 ids x 0.5 x w
    np.testing.assert_allclose(paths[:, 0], paths[:, 1] + paths[:, 2], rtol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(model(inputs)), paths[:, 0], rtol=1e-6)


def test_without_the_wide_path_the_classifier_trains_itself_and_has_no_path_logits():
    model = TinyWideAndDeep()
    model.ngram_logit = model.combination = None
    inputs = {"features": np.ones((3, 4), "float32")}
    assert training_model(model) is model and classifier_of(model) is model
    np.testing.assert_allclose(
        ops.convert_to_numpy(model(inputs)), ops.convert_to_numpy(model.deep_logits(inputs))
    )
    with pytest.raises(ValueError, match="need the wide path"):
        model.path_logits(inputs)


def test_path_training_trains_the_deep_path_on_its_own_loss_and_reports_each_path():
    classifier = TinyWideAndDeep()
    classifier.ngram_logit.trainable = False
    model = training_model(classifier)
    assert isinstance(model, PathTraining) and classifier_of(model) is classifier
    model.compile(
        optimizer="sgd",
        loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )
    inputs = {"features": np.ones((4, 4), "float32"), "ngram_ids": np.ones((4, 5), "int32")}
    labels = np.eye(2, dtype="float32")[[1, 1, 1, 1]]
    assert tuple(model(inputs).shape) == (4, 3, 2)
    assert tuple(classifier(inputs).shape) == (4, 2)  # the classifier is unchanged by it
    metrics = model.evaluate(inputs, labels, verbose=0, return_dict=True)
    assert {"accuracy", "deep_accuracy", "wide_accuracy"} <= set(metrics)
    deep = ops.convert_to_numpy(classifier.deep_logits(inputs))
    expected = keras.losses.CategoricalCrossentropy(from_logits=True)(labels, deep)
    assert metrics["loss"] == pytest.approx(float(expected), rel=1e-5)
    head, wide = classifier.head.get_weights(), classifier.ngram_logit.get_weights()
    model.fit(inputs, labels, epochs=1, verbose=0)
    assert not np.allclose(classifier.head.get_weights()[0], head[0])  # its layers trained
    for after, before in zip(classifier.ngram_logit.get_weights(), wide):
        np.testing.assert_array_equal(after, before)  # the wide path trains apart
