"""The whole IMDB pipeline on a tiny corpus, with LocalDagRunner, in this process."""
import io
import os

import pytest
import tensorflow as tf

from pipeline.runner import build_local_pipeline, run_local
from tests.conftest import NEGATIVE, POSITIVE, write_aclimdb
from tests.e2e.cli_util import pipeline_components

pytestmark = pytest.mark.e2e

COMPONENTS = pipeline_components("ReviewsExampleGen")


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
    assert "[12/12]" in progress and "Trainer done in" in progress
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


def test_the_pushed_model_is_registered_in_the_local_mlflow_registry(runs):
    from components.model_registry.backends import from_config, mlflow_config

    summary, paths, _ = runs["first"]
    assert summary["registered"] == {
        "registry": "mlflow", "name": "imdb-transformer", "version": "1", "alias": "champion",
        "uri": "models:/imdb-transformer/1"}
    registry = from_config(mlflow_config(paths["registry_dir"], tracking_uri=None))
    (version,) = registry.versions("imdb-transformer")  # the strict run registered nothing
    assert version["source"] == summary["pushed_model"]
    assert version["aliases"] == ["champion"]
    assert version["metrics"]["binary_accuracy"] == pytest.approx(
        summary["metrics"]["binary_accuracy"])
    assert version["tags"]["pipeline_run_id"] == summary["run_id"]
    assert {"mlmd_examples_id", "mlmd_transform_graph_id", "mlmd_model_id"} <= set(
        version["tags"])


def test_rerun_is_served_from_cache_without_a_duplicate_push(runs):
    first, second, third = runs["first"][0], runs["second"][0], runs["third"][0]
    data_and_training = COMPONENTS - {"latest_blessed_model_resolver", "Evaluator", "Pusher",
                                      "ModelRegistry", "RunReport"}
    assert {second["components"][c]["state"] for c in data_and_training} == {"cached"}
    # The second run found a blessed baseline, so the Evaluator compared against it; the
    # identical model was not published again.
    assert second["pushed_version"] == first["pushed_version"]
    assert second["registered"]["version"] == first["registered"]["version"] == "1"
    assert third["components"]["Evaluator"]["state"] == "cached"
    assert third["components"]["Pusher"]["state"] == "cached"


def test_a_model_failing_the_threshold_is_not_pushed(runs):
    summary, paths, _ = runs["strict"]
    assert summary["blessed"] is False
    assert summary["pushed_model"] is None
    assert summary["registered"] is None
    assert any("binary_accuracy" in failure for failure in summary["blessing_failures"])
    assert os.listdir(paths["serving_model_dir"]) == [runs["first"][0]["pushed_version"]]


def test_the_run_report_renders_in_headless_chromium(runs):
    """The report of a real run, opened in a real browser: tables, plots and heatmaps render
    from the page alone (no network), and a screenshot is kept beside it."""
    from playwright.sync_api import sync_playwright

    from tests.browser_util import open_page

    summary, paths, _ = runs["first"]
    report = summary["report"]
    requests = []
    with sync_playwright() as playwright:
        browser, page = open_page(playwright, "file://" + report, requests)
        try:
            assert page.title() == "Run report: imdb-transformer"
            metrics = page.locator("#metrics-overall tbody tr")
            assert metrics.count() >= 5 and metrics.first.is_visible()
            assert "binary_accuracy" in page.locator("#metrics-overall").inner_text()
            assert page.locator("#metrics-slices tbody tr").count() >= 2
            # Every plot decoded to real pixels and laid out at a visible size.
            sizes = page.eval_on_selector_all(
                "img.plot", "images => images.map(i => [i.className, i.complete, "
                "i.naturalWidth, i.getBoundingClientRect().width])")
            assert all(complete and natural > 0 and shown > 100
                       for _, complete, natural, shown in sizes), sizes
            assert sum("attention-heatmap" in name for name, *_ in sizes) >= 1
            assert len(sizes) >= 2  # the curves, then the heatmaps
            assert page.locator("#lineage-artifacts tbody tr").count() >= 9
            screenshot = os.path.join(os.path.dirname(report), "report.png")
            page.screenshot(path=screenshot, full_page=True)
        finally:
            browser.close()
    assert all(url.startswith(("file://", "data:")) for url in requests), requests
    with open(screenshot, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
