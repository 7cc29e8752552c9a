"""Warm start from a base model's kept weights: loaded when the vocabularies and the weight
shapes match, refused with the reason (and the fresh weights untouched) otherwise."""

import types

import keras
import numpy as np

from trainer_module.training import warm_start


def model(width=4):
    inputs = keras.Input((3,))
    return keras.Model(inputs, keras.layers.Dense(2)(keras.layers.Dense(width)(inputs)))


def artifact(root, name, vocabulary=b"the\nfilm\n"):
    """A model artifact's serving folder and a transform graph with one vocabulary."""
    assets = root / f"transform-{name}" / "transform_fn" / "assets"
    assets.mkdir(parents=True)
    (assets / "vocabulary").write_bytes(vocabulary)
    serving = root / f"model-{name}" / "Format-Serving"
    serving.mkdir(parents=True)
    return types.SimpleNamespace(
        serving_model_dir=str(serving),
        base_model=None,
        transform_output=str(root / f"transform-{name}"),
    )


def test_without_a_base_model_there_is_nothing_to_do(tmp_path):
    assert warm_start.load(model(), artifact(tmp_path, "a")) is None


def test_the_base_models_weights_are_loaded_when_vocabularies_and_shapes_match(tmp_path):
    base, trained = artifact(tmp_path, "base"), model()
    warm_start.save(trained, base)
    run = artifact(tmp_path, "run")
    run.base_model = base.serving_model_dir
    fresh = model()
    assert warm_start.load(fresh, run) == {"from": str(tmp_path / "model-base")}
    for mine, theirs in zip(fresh.get_weights(), trained.get_weights()):
        np.testing.assert_array_equal(mine, theirs)


def test_another_vocabulary_or_architecture_trains_from_scratch_and_says_why(tmp_path):
    base = artifact(tmp_path, "base")
    warm_start.save(model(), base)
    run = artifact(tmp_path, "run", vocabulary=b"the\nmovie\n")
    run.base_model = base.serving_model_dir
    fresh = model()
    initial = fresh.get_weights()
    assert warm_start.load(fresh, run) == {
        "skipped": "the vocabularies differ from the base model's (vocabulary)"
    }
    for mine, before in zip(fresh.get_weights(), initial):
        np.testing.assert_array_equal(mine, before)
    wider = model(width=8)
    initial = wider.get_weights()
    same_vocabulary = artifact(tmp_path, "same")
    same_vocabulary.base_model = base.serving_model_dir
    result = warm_start.load(wider, same_vocabulary)
    assert result["skipped"].startswith("the model differs from the base model")
    for mine, before in zip(wider.get_weights(), initial):
        np.testing.assert_array_equal(mine, before)
