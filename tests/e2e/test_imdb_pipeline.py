"""The whole IMDB pipeline on a tiny corpus, with LocalDagRunner, in this process."""
import io
import os

import pytest
import tensorflow as tf

from pipeline.runner import build_local_pipeline, run_local
from tests.conftest import NEGATIVE, POSITIVE, write_aclimdb

pytestmark = pytest.mark.e2e

COMPONENTS = {"ReviewsExampleGen", "StatisticsGen", "SchemaGen", "ExampleValidator",
              "AnomaliesGate", "Transform", "Trainer", "latest_blessed_model_resolver",
              "Evaluator", "Pusher"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three runs into one output directory: fresh, again, and again with an impossible bar."""
    root = tmp_path_factory.mktemp("imdb")
    data = write_aclimdb(root / "data", copies=3)

    def run(**kwargs):
        pipeline, paths = build_local_pipeline(task="imdb", data_dir=str(data),
                                               output_dir=str(root / "out"), preset="tiny",
                                               train_steps=60, eval_steps=3, **kwargs)
        progress = io.StringIO()
        summary = run_local(pipeline, paths, stream=progress)
        return summary, paths, progress.getvalue()

    return {"first": run(), "second": run(), "third": run(),
            "strict": run(blessing_threshold=1.01)}


def test_every_component_ran_once_and_reported_progress(runs):
    summary, _, progress = runs["first"]
    assert set(summary["components"]) == COMPONENTS
    assert {c["state"] for c in summary["components"].values()} == {"complete"}
    assert "[10/10]" in progress and "Trainer done in" in progress
    assert summary["metrics"]["example_count"] == 48
    assert {"binary_accuracy", "auc", "precision", "recall", "calibration"} <= set(
        summary["metrics"])


def test_a_blessed_model_was_pushed_and_answers_raw_text(runs):
    summary, paths, _ = runs["first"]
    assert summary["blessed"] is True
    pushed = summary["pushed_model"]
    assert os.path.dirname(pushed) == paths["serving_model_dir"]
    assert os.path.basename(pushed) == summary["pushed_version"]
    model = tf.saved_model.load(pushed)  # plain TensorFlow, no project code
    texts = POSITIVE[:4] + NEGATIVE[:4]
    outputs = model.signatures["classify_text"](text=tf.constant(texts))
    assert outputs["probabilities"].shape == (8, 2)
    assert outputs["label"].numpy().tolist() == [1] * 4 + [0] * 4


def test_rerun_is_served_from_cache_without_a_duplicate_push(runs):
    first, second, third = runs["first"][0], runs["second"][0], runs["third"][0]
    data_and_training = COMPONENTS - {"latest_blessed_model_resolver", "Evaluator", "Pusher"}
    assert {second["components"][c]["state"] for c in data_and_training} == {"cached"}
    # The second run found a blessed baseline, so the Evaluator compared against it; the
    # identical model was not published again.
    assert second["pushed_version"] == first["pushed_version"]
    assert third["components"]["Evaluator"]["state"] == "cached"
    assert third["components"]["Pusher"]["state"] == "cached"


def test_a_model_failing_the_threshold_is_not_pushed(runs):
    summary, paths, _ = runs["strict"]
    assert summary["blessed"] is False
    assert summary["pushed_model"] is None
    assert any("binary_accuracy" in failure for failure in summary["blessing_failures"])
    assert os.listdir(paths["serving_model_dir"]) == [runs["first"][0]["pushed_version"]]
