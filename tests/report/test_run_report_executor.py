import base64
import html
import io
import json

import pytest
from PIL import Image
from tfx.dsl.components.base import base_executor
from tfx.proto.orchestration import pipeline_pb2

from components.run_report.component import RunReportArtifact
from components.run_report.executor import REPORT_PATH, Executor
from tests.report.fixtures import run_inputs
from tests.report.html_util import parse

CARD = {
    "task": "imdb",
    "model": "text_encoder",
    "preset": "tiny",
    "description": "sentiment",
    "intended_use": "Reviews only.",
    "limitations": ["Movie reviews only."],
    "gating_metric": "binary_accuracy",
}


def run_executor(tmp_path, export_dir, card=CARD, **options):
    inputs = run_inputs(tmp_path / "artifacts", export_dir, **options)
    report = RunReportArtifact()
    report.uri = str(tmp_path / "report")
    context = base_executor.BaseExecutor.Context(
        pipeline_info=pipeline_pb2.PipelineInfo(id="imdb-text-encoder"),
        pipeline_run_id="2026-11-21T10:00:00",
    )
    Executor(context=context).Do(inputs, {"report": [report]}, {"model_card": json.dumps(card)})
    path = report.get_string_custom_property(REPORT_PATH)
    with open(path) as f:
        return path, f.read()


def decoded(image_attributes) -> Image.Image:
    prefix = "data:image/png;base64,"
    assert image_attributes["src"].startswith(prefix)  # embedded: the page works offline
    return Image.open(io.BytesIO(base64.b64decode(image_attributes["src"][len(prefix) :])))


@pytest.fixture(scope="module")
def blessed_run(tmp_path_factory, text_encoder_run):
    return run_executor(tmp_path_factory.mktemp("blessed"), text_encoder_run.export_dir)


def test_report_page_is_written_in_the_artifact_and_named_by_it(blessed_run, tmp_path_factory):
    path, text = blessed_run
    assert path.endswith("/report/index.html")
    assert text.startswith("<!DOCTYPE html>")
    assert "http://" not in text and "https://" not in text  # nothing fetched from the network
    page = parse(text)
    assert {"model-card", "evaluation", "training", "attention", "data", "lineage"} <= page.ids


def test_metrics_overall_and_by_slice_with_baseline_and_thresholds(blessed_run):
    page = parse(blessed_run[1])
    overall = {row[0]: row[1:] for row in page.tables["metrics-overall"][1:]}
    assert overall["binary_accuracy"] == ["0.7500", "0.7000", "0.0500"]
    assert overall["example_count"] == ["2", "", ""]  # a count, not a rate
    slices = page.tables["metrics-slices"]
    assert slices[0] == ["slice", "auc", "binary_accuracy", "mean_label"]
    assert slices[1] == ["length_bucket=0-99", "0.6250", "0.5000", "0.5000"]
    # AUC is undefined on a slice of one class: blank, not TFMA's 0.0.
    assert slices[2] == ["rating=9", "", "1.0000", "1.0000"]
    assert page.tables["thresholds"][1] == ["BinaryAccuracy", "overall", "value ≥ 0.6"]
    assert "against baseline: the latest blessed model, MLMD artifact 9" in blessed_run[1]


def test_model_card_sections_and_lineage(blessed_run):
    text = blessed_run[1]
    page = parse(text)
    details = dict(page.tables["model-details"])
    assert details["task"] == "imdb" and details["preset"] == "tiny"
    assert int(details["trainable parameters"].replace(",", "")) > 0
    for heading in ("Intended use", "Training data", "Evaluation data", "Caveats and limitations"):
        assert f"<h3>{heading}</h3>" in text
    assert "Movie reviews only." in text
    # The values training used: the preset's warmup of a quarter of the steps, as 4 steps.
    assert details["learning rate"] == "WarmupInverseSqrt: peak_learning_rate 0.003, warmup_steps 4"
    assert '"warmup_fraction": 0.25' in details["configuration"]
    assert details["labels (training split)"].startswith("label: mean 0.5")
    assert "of <code>/data/shop-reviews</code> (csv layout)" in text  # the training data
    lineage = {row[0]: row[1:] for row in page.tables["lineage-artifacts"][1:]}
    assert lineage["model (Trainer)"][:2] == ["Model", "13"]
    assert lineage["baseline model"][:2] == ["Model", "9"]
    assert lineage["evaluation"][2].endswith("/evaluation")
    run = dict(page.tables["run"])
    assert run["run id"] == "2026-11-21T10:00:00"
    assert run["pushed to"] == "version 1795000000 at /serving/imdb/1795000000"


def test_training_curves_come_from_the_tensorboard_logs(blessed_run):
    page = parse(blessed_run[1])
    final = {row[0]: row[1:] for row in page.tables["final-metrics"][1:]}
    assert final["loss"] == ["0.4000", "0.5000"]
    assert final["accuracy"] == ["0.8000", "0.7500"]
    curves = [i for i in page.images if i["alt"] == "training and validation curves"]
    assert len(curves) == 1 and decoded(curves[0]).size[0] > 500


def test_attention_heatmaps_for_each_evaluation_example(blessed_run):
    text = blessed_run[1]
    heatmaps = [i for i in parse(text).images if "attention-heatmap" in i["class"]]
    assert len(heatmaps) == 2  # the two evaluation examples
    width, height = decoded(heatmaps[0]).size
    assert width > 400 and height > 400  # 2 layers x 2 heads
    assert "<b>label</b>: 1" in text and "<b>predicted</b>:" in text


def test_data_statistics(blessed_run):
    page = parse(blessed_run[1])
    train = {row[0]: row[1:] for row in page.tables["statistics-train"][1:]}
    assert train["text"][:2] == ["string", "0.0%"]
    assert train["label"][:2] == ["int", "25.0%"]
    assert "None found." in blessed_run[1]


def test_an_unblessed_run_says_why_and_that_nothing_was_pushed(tmp_path, text_encoder_run):
    _, text = run_executor(tmp_path, text_encoder_run.export_dir, blessed=False, anomalies=True)
    page = parse(text)
    assert "not blessed" in text and "not pushed" in text
    assert "This model was NOT blessed" in text
    assert "binary_accuracy value on overall: 0.7500 misses" in text
    assert page.tables["thresholds"][1] == ["BinaryAccuracy", "overall", "value ≥ 0.9"]
    assert dict(page.tables["run"])["pushed to"] == "not pushed"
    assert "split 'eval', feature 'label': Column dropped" in html.unescape(text)
    assert "ExampleValidator reported anomalies" in text


@pytest.mark.parametrize(
    "compared, found",
    [
        (True, "Within every threshold of the data the champion was evaluated on."),
        (False, "No champion yet: nothing to compare with."),
    ],
)
def test_the_drift_check_says_what_it_compared_and_found(
    tmp_path, text_encoder_run, compared, found
):
    card = {**CARD, "drift_checks": ["label: label balance, jensen shannon divergence at most 0.1"]}
    _, text = run_executor(tmp_path, text_encoder_run.export_dir, card=card, drift=compared)
    text = html.unescape(text)
    assert "Drift from the champion's data (DistributionValidator)" in text
    assert "Checked: label: label balance, jensen shannon divergence at most 0.1." in text
    assert found in text


def test_the_training_data_names_the_span_or_the_window():
    from components.run_report.artifacts import ArtifactRef
    from components.run_report.report import training_data

    span = ArtifactRef("examples", "Examples", 3, "/root/ExampleGen/examples/3", {"span": 2})
    assert training_data({"examples": span}, "train: 64", {}) == (
        "span 2: train: 64 examples; <code>/root/ExampleGen/examples/3</code>"
    )
    window = ArtifactRef(
        "training_examples", "Examples", 7, "/root/Window/examples/7", {"span": 2, "spans": "1,2"}
    )
    assert training_data(
        {"examples": span, "training_examples": window}, "train: 64", {"train_examples": 112}
    ) == (
        "spans 1,2 (a rolling window; the newest, span 2, alone was validated and is the "
        "evaluation data): 112 training examples; <code>/root/Window/examples/7</code>"
    )
    folder = ArtifactRef("examples", "Examples", 3, "/e", {"span": 0})
    assert training_data({"examples": folder}, "", {}).startswith("the data folder: unknown")


def test_the_model_card_says_what_pretraining_read_or_why_it_was_skipped():
    from components.run_report.report import pretraining_done

    history = {
        "config": {"pretrain_objective": "masked"},
        "pretraining": {
            "steps": 2_188,
            "texts": 70_000,
            "unlabeled_texts": 50_000,
            "last_accuracy": 0.1234,
        },
    }
    assert pretraining_done(history) == (
        "2,188 steps of masked-token prediction over 70,000 texts (50,000 of them "
        "unlabelled), its last accuracy 0.1234"
    )
    skipped = {"pretraining": {"skipped": "warm-started from /m/1"}}
    assert pretraining_done(skipped) == "skipped: warm-started from /m/1"
    assert pretraining_done({"config": {}}) == ""
