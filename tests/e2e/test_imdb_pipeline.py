"""The IMDB pipeline end to end, through the CLI, on the session's run (tests/e2e/conftest.py)
and on copies of its output: progress, push, registry, report, predict, cache, the gate."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from pipeline import configs
from tests.conftest import NEGATIVE, POSITIVE
from tests.e2e.cli_util import copy_output, only_version, pipeline_components, run_cli
from tests.report.html_util import check_report
from trainer_module.serving import runtimes

pytestmark = pytest.mark.e2e

COMPONENTS = pipeline_components("ReviewsExampleGen", schema_gen="ImportSchemaGen")

GERMAN_REVIEWS = [
    "Ein wunderbarer Film, die Schauspieler sind großartig und die Musik auch.",
    "Langweilig und viel zu lang, ich habe mich die ganze Zeit geärgert.",
    "Eine schöne Geschichte mit einem guten Ende, ich war sehr berührt.",
    "Das war der schlechteste Film des Jahres, schade um die Zeit und das Geld.",
]


def test_every_component_ran_once_and_reported_progress(imdb_run):
    summary, progress = imdb_run.summary, imdb_run.progress
    assert summary["status"] == "succeeded"
    assert summary["pipeline_name"] == "imdb-text-encoder" and summary["run_id"]
    assert set(summary["components"]) == COMPONENTS
    assert {c["state"] for c in summary["components"].values()} == {"complete"}
    # The components ran one after another, within the run's wall time (seconds, not ms).
    assert sum(c["seconds"] for c in summary["components"].values()) <= summary["wall_seconds"]
    # One line when each component starts and one when it is done, numbered.
    for name in ("ReviewsExampleGen", "Trainer", "RunReport"):
        assert f"{name} ..." in progress and f"{name} done in " in progress
    assert progress.count(" done in ") == len(COMPONENTS) == 16
    assert "[16/16]" in progress
    assert summary["metrics"]["example_count"] == 48
    assert summary["data"] == {"data_layout": "aclimdb", "span": 1}  # imdb/span-{SPAN}
    # --train-steps 60 of the tiny preset's batch 8, over the 48 training reviews it counted.
    assert summary["training"] == {
        "train_steps": 60,
        "epochs": 10.0,
        "train_examples": 48,
        "resumed_from_step": 0,
        "warm_start": None,
    }
    assert {"binary_accuracy", "auc", "precision", "recall", "calibration"} <= set(
        summary["metrics"]
    )
    assert summary["log_file"].startswith(str(imdb_run.output / "logs"))


def test_the_plan_and_its_cost_are_said_before_transform_and_kept_beside_the_actual_time(
    imdb_run,
):
    """The tiny preset was never measured on the full data: the plan says so, and how to cap
    training; the summary keeps the plan and the run's minutes."""
    progress, summary = imdb_run.progress, imdb_run.summary
    plan = progress.index("plan: 48 training examples, 60 steps in batches of 8 (10 epochs)")
    assert progress.index("StatisticsGen done in") < plan < progress.index("] Transform ...")
    assert (
        "plan: no projected time: no measured speed of this family and preset; training "
        "capped by --time-budget 60 min"
    ) in progress
    cost = summary["cost"]
    assert (cost["train_examples"], cost["train_steps"], cost["batch_size"]) == (48, 60, 8)
    assert cost["projected_minutes"] is None and cost["actual_minutes"] == round(
        summary["wall_seconds"] / 60, 2
    )


def test_the_trainer_reports_its_steps_under_its_line(imdb_run):
    lines = imdb_run.progress.splitlines()
    trainer = lines.index(next(line for line in lines if line.endswith("] Trainer ...")))
    done = lines.index(next(line for line in lines if "] Trainer done in " in line))
    # (On a slow machine the Trainer's own line repeats, with its time, between the steps.)
    under = [line.strip() for line in lines[trainer + 1 : done] if not line.startswith("[")]
    # The plan (the step time measured against --time-budget 60: all 60 steps fit), the
    # encoder's steps, then the wide path's (trained alone: on so few reviews, once, on every
    # review, with no held-out slice).
    plan = [line for line in under if line.startswith("plan: ")]
    reported = [line for line in under if line.startswith("training: step ")]
    wide = [line for line in under if line.startswith("wide path: step ")]
    served = [line for line in under if line.startswith("runtimes: ")]
    assert under == plan + reported + wide + served and wide[-1].endswith(" in all"), under
    # Then the serving runtimes' conversion and checks (trainer_module/serving/onnx_export.py).
    assert served[0].startswith("runtimes: converting the model part to ONNX")
    assert [line.split()[1] for line in served[1:4]] == [
        "savedmodel",
        "onnxruntime",
        "onnxruntime-int8",
    ]
    assert served[-1].endswith("serves the model (the fastest that passed)")
    measured, steps_line, schedule = plan
    assert " per step of 8 (measured over 5 steps on this machine): " in measured
    assert measured.endswith("fit in --time-budget 60 min, more than the 60 planned: all of them")
    assert steps_line.startswith("plan: 60 steps in batches of 8, 10 epochs of 48 training ")
    assert schedule.startswith("plan: learning rate ") and schedule.endswith(" at step 60")
    steps = [int(line.split()[2].split("/")[0]) for line in reported]
    assert steps == sorted(steps) and steps[0] < steps[-1] == 60, steps
    assert all(line.split()[2].endswith("/60") for line in reported)
    assert "loss " in reported[1] and " examples/s, " in reported[1]
    assert reported[1].endswith(" left")
    assert reported[-1].endswith(" in all")


def test_a_blessed_model_was_pushed_and_answers_raw_text(imdb_run):
    summary = imdb_run.summary
    assert summary["blessed"] is True
    pushed = summary["pushed_model"]
    assert os.path.dirname(pushed) == str(imdb_run.serving_dir)
    assert os.path.basename(pushed) == summary["pushed_version"]
    model = tf.saved_model.load(pushed)  # plain TensorFlow, no project code
    texts = POSITIVE[:4] + NEGATIVE[:4]
    outputs = model.signatures["classify_text"](text=tf.constant(texts))
    assert outputs["probabilities"].shape == (8, 2)
    assert outputs["label"].numpy().tolist() == [1] * 4 + [0] * 4


def test_predict_answers_with_the_newest_pushed_version(imdb_run):
    texts = ["a wonderful film, I loved it", "Café — awful, boring mess"]
    rows = run_cli("predict", "--saved-model", imdb_run.serving_dir, *texts).lines
    assert [r["text"] for r in rows] == texts
    assert [r["label"] for r in rows] == ["positive", "negative"]
    assert all(r["classes"] == ["negative", "positive"] for r in rows)
    assert all(abs(sum(r["probabilities"]) - 1) < 1e-4 for r in rows)
    assert rows[0]["model"] == imdb_run.summary["pushed_model"]


def test_predict_answers_with_a_registered_version_by_alias_or_number(imdb_run):
    name = imdb_run.summary["pipeline_name"]
    output = imdb_run.summary["pushed_model"].split("/serving_model/")[0]
    for uri in (f"models:/{name}@champion", f"models:/{name}/1"):
        (row,) = run_cli("predict", "--output", output, "--saved-model", uri, "Loved it").lines
        assert row["model"] == imdb_run.summary["pushed_model"] and row["label"] == "positive"
    missing = run_cli(
        "predict", "--output", output, "--saved-model", f"models:/{name}@nobody", "x", check=False
    )
    assert missing.code == 2 and "nobody" in missing.stderr


def test_runs_lists_the_run_with_its_status_blessing_metrics_and_version(imdb_run):
    output = imdb_run.summary["pushed_model"].split("/serving_model/")[0]
    name = imdb_run.summary["pipeline_name"]
    rows = run_cli("runs", "--output", output, "--pipeline-name", name).lines
    mine = [r for r in rows if r["run_id"] == imdb_run.summary["run_id"]]
    assert mine == [
        {
            "run_id": imdb_run.summary["run_id"],
            "pipeline_name": name,
            "status": "succeeded",
            "blessed": True,
            "metrics": imdb_run.summary["metrics"],
            "pushed_version": imdb_run.summary["pushed_version"],
            "registered": f"models:/{name}/1",
        }
    ]


def test_predict_streams_a_jsonl_file_one_answer_per_line_and_names_bad_lines(imdb_run, tmp_path):
    texts = ["a wonderful film, I loved it", "Café — awful, boring mess"]
    lines = [
        json.dumps({"text": texts[0]}).encode(),
        b'{"text": "unclosed',
        json.dumps({"review": "x"}).encode(),
        b"",
        json.dumps({"text": "  "}).encode(),
        json.dumps({"text": texts[1]}, ensure_ascii=False).encode(),
        b'{"text": null}',
        b'{"text": "caf\xe9"}',  # Latin-1, not UTF-8
        b"[" * 5000 + b"]" * 5000,
    ]
    path = tmp_path / "reviews.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = run_cli(
        "predict",
        "--saved-model",
        imdb_run.serving_dir,
        "--input",
        path,
        "--batch-size",
        "2",
        check=False,
    )
    assert result.code == 1
    answers = result.lines
    assert [a["line"] for a in answers] == [1, 2, 3, 5, 6, 7, 8, 9]  # the blank line 4 skipped
    assert answers[1]["error"].startswith("not JSON: Unterminated string")
    assert answers[2]["error"] == "expected an object with 'text'"
    assert answers[3]["error"] == "'text': the text is empty"
    assert answers[5]["error"] == "'text': expected a string, got NoneType"
    assert answers[6]["error"] == "not UTF-8 (byte 13)"
    assert answers[7]["error"] == "the JSON is nested too deeply"
    direct = run_cli("predict", "--saved-model", imdb_run.serving_dir, *texts).lines
    for answer, row in zip((answers[0], answers[4]), direct):
        assert (answer["label"], answer["probabilities"]) == (row["label"], row["probabilities"])
    assert "6 line(s) of" in result.stderr


def read_predictions(summary: dict) -> dict:
    """id -> answer, from the JSON lines files an `infer` run wrote."""
    rows = [
        json.loads(line)
        for path in summary["prediction_files"]
        for line in open(path, encoding="utf-8")
    ]
    return {row.pop("id"): row for row in rows}


@pytest.mark.slow
def test_infer_scores_a_folder_with_the_champion_as_predict_does(imdb_run, tmp_path):
    output = copy_output(imdb_run.output, tmp_path / "out")
    folder = tmp_path / "unlabeled"
    folder.mkdir()
    texts = ["a wonderful film, I loved it", "Café — awful, boring mess", "It was fine."]
    (folder / "review.txt").write_text(texts[0], encoding="utf-8")
    (folder / "more.jsonl").write_text(
        "\n".join(json.dumps({"text": t}, ensure_ascii=False) for t in texts[1:]) + "\n",
        encoding="utf-8",
    )
    (summary,) = run_cli("infer", "--task", "imdb", "--data", folder, "--output", output).lines
    assert summary["status"] == "succeeded"
    assert summary["components"] == {
        "UnlabeledExampleGen": "complete",
        "champion_resolver": "complete",
        "BulkInferrer": "complete",
        "PredictionsWriter": "complete",
        # The skew check: the inputs' profile against the champion's training data.
        "UnlabeledStatisticsGen": "complete",
        "baseline_statistics_resolver": "complete",
        "SkewValidator": "complete",
    }
    assert summary["skew"] is not None  # compared (three texts: what it finds is noise)
    assert summary["model_version"] == imdb_run.summary["pushed_version"]
    assert summary["predictions"] == 3
    # TFX's own PredictionLogs, as TFRecords.
    logs = tf.io.gfile.glob(os.path.join(summary["prediction_logs"], "prediction_logs-*.gz"))
    assert sum(1 for _ in tf.data.TFRecordDataset(logs, compression_type="GZIP")) == 3
    rows = read_predictions(summary)
    assert set(rows) == {"review.txt", "more.jsonl:1", "more.jsonl:2"}
    # BulkInferrer runs the SavedModel (not the ONNX runtime `predict` takes by default).
    direct = run_cli(
        "predict", "--saved-model", imdb_run.serving_dir, "--runtime", "savedmodel", *texts
    ).lines
    for key, row in zip(("review.txt", "more.jsonl:1", "more.jsonl:2"), direct):
        assert rows[key]["text"] == row["text"]
        assert (rows[key]["label"], rows[key]["label_id"]) == (row["label"], row["label_id"])
        np.testing.assert_allclose(rows[key]["probabilities"], row["probabilities"], atol=2e-6)
    # German reviews: the answers are written, and the skew check names the word tokens.
    german = tmp_path / "german"
    german.mkdir()
    (german / "reviews.jsonl").write_text(
        "\n".join(json.dumps({"text": t}, ensure_ascii=False) for t in GERMAN_REVIEWS * 3) + "\n"
    )
    result = run_cli("infer", "--task", "imdb", "--data", german, "--output", output)
    (skewed,) = result.lines
    assert skewed["predictions"] == 12
    assert any("feature 'text_tokens'" in line for line in skewed["skew"]), skewed["skew"]
    assert (
        "warning: the inputs differ from the champion's training data: split 'unlabeled' "
        "against 'train', feature 'text_tokens'" in result.stderr
    )
    # The same folder and champion again: nothing is scored twice.
    (again,) = run_cli("infer", "--task", "imdb", "--data", folder, "--output", output).lines
    assert set(again["components"].values()) == {"cached", "complete"}
    assert again["components"]["BulkInferrer"] == "cached"
    assert again["prediction_files"] == summary["prediction_files"]


def test_infer_without_a_pushed_model_says_to_run_the_pipeline_first(tmp_path):
    (tmp_path / "r.txt").write_text("text")
    result = run_cli(
        "infer", "--task", "imdb", "--data", tmp_path, "--output", tmp_path / "empty", check=False
    )
    assert result.code == 2
    assert (
        "pipeline imdb-text-encoder has pushed no model under "
        f"{tmp_path / 'empty'}: run `tfx-transformers run --task imdb --model "
        "text_encoder` first"
    ) in result.stderr


def test_the_pushed_model_is_registered_in_the_local_mlflow_registry(imdb_run):
    summary = imdb_run.summary
    assert summary["registered"] == {
        "registry": "mlflow",
        "name": "imdb-text-encoder",
        "version": "1",
        "alias": "champion",
        "uri": "models:/imdb-text-encoder/1",
    }
    (version,) = run_cli("registry", "list", "--output", imdb_run.output).lines
    assert (version["name"], version["version"], version["aliases"]) == (
        "imdb-text-encoder",
        "1",
        ["champion"],
    )
    assert version["saved_model"] == summary["pushed_model"]
    assert version["metrics"]["binary_accuracy"] == pytest.approx(
        summary["metrics"]["binary_accuracy"]
    )
    assert version["tags"]["pipeline_run_id"] == summary["run_id"]
    assert {"mlmd_examples_id", "mlmd_transform_graph_id", "mlmd_model_id"} <= set(version["tags"])
    shown = run_cli("registry", "--output", imdb_run.output, "show", "imdb-text-encoder").lines
    assert shown == [version]  # the champion


def test_mlflows_loader_answers_raw_text_with_the_registered_champion(imdb_run, monkeypatch):
    import mlflow
    import pandas as pd

    registry_dir = configs.output_paths(imdb_run.output, "")["registry_dir"]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{registry_dir}/mlflow.db")
    model = mlflow.pyfunc.load_model("models:/imdb-text-encoder@champion")
    texts = ["a wonderful, moving film", "dull and far too long"]
    answers = model.predict(pd.DataFrame({"text": texts}))
    folder = imdb_run.summary["pushed_model"]
    pushed = tf.saved_model.load(folder)
    # Through the runtime the Trainer chose, with the SavedModel's labels.
    expected = runtimes.Served(pushed, folder)(texts)
    assert np.allclose(np.stack(answers["probabilities"]), expected["probabilities"], atol=1e-6)
    saved_model = pushed.signatures["classify_text"](text=tf.constant(texts))
    assert list(answers["label"]) == [n.decode() for n in saved_model["label_name"].numpy()]


def test_report_names_the_runs_page_and_rebuilds_it_from_mlmd(imdb_run):
    summary = imdb_run.summary
    page = check_report(summary["report"])
    latest = run_cli("report", "--output", imdb_run.output).stdout.strip()
    assert latest == summary["report"]
    rebuilt = run_cli(
        "report", "--output", imdb_run.output, "--run", summary["run_id"]
    ).stdout.strip()
    assert rebuilt.startswith(
        os.path.join(str(imdb_run.output), "reports", "imdb-text-encoder", "")
    )
    assert check_report(rebuilt).tables["metrics-overall"] == page.tables["metrics-overall"]
    assert ["trained", "60 steps of 8 (10.00 epochs of 48 examples)"] in page.tables[
        "model-details"
    ]


@pytest.mark.slow
def test_reruns_are_served_from_cache_without_a_duplicate_push(imdb_next_span, imdb_reruns):
    """The next span's run, with its window of two spans, rerun twice."""
    first, second, third = imdb_next_span.summary, imdb_reruns.second, imdb_reruns.third
    components = COMPONENTS | {"ReviewsExampleGenWindow"}
    assert set(first["components"]) == set(second["components"]) == components
    resolvers = {
        "latest_blessed_model_resolver",
        "baseline_statistics_resolver",
        "base_model_resolver",
    }
    # The second run's champion is the model it trained, so the drift check has a new baseline
    # (the statistics of that run's span): it and the gate ran; data and training did not.
    data_and_training = (
        components
        - resolvers
        - {
            "DistributionValidator",
            "AnomaliesGate",
            "Evaluator",
            "Pusher",
            "ModelRegistry",
            "RunReport",
        }
    )
    assert {"ReviewsExampleGenWindow", "Transform", "Trainer"} <= data_and_training
    assert {second["components"][c]["state"] for c in data_and_training} == {"cached"}
    assert second["components"]["DistributionValidator"]["state"] == "complete"
    # The second run found a new blessed baseline, so the Evaluator compared against it; the
    # identical model was not published or registered again.
    assert second["components"]["Evaluator"]["state"] == "complete"
    assert second["pushed_version"] == first["pushed_version"]
    assert second["registered"]["version"] == first["registered"]["version"] == "2"
    # Everything cached but the resolvers, which look their baselines up every time.
    assert {third["components"][c]["state"] for c in components - resolvers} == {"cached"}
    # A cached Trainer trains nothing, so it reports no steps.
    assert "training: step" not in imdb_reruns.third_progress
    assert "] Trainer done in " in imdb_reruns.third_progress
    versions = os.listdir(os.path.join(imdb_reruns.output, "serving_model", "imdb-text-encoder"))
    assert max(versions) == first["pushed_version"] and len(versions) == 2


@pytest.mark.slow
def test_a_new_span_is_read_trained_on_and_pushed_as_the_next_version(imdb_run, imdb_next_span):
    summary = imdb_next_span.summary
    assert summary["status"] == "succeeded"
    assert summary["data"]["span"] == 2
    assert {
        summary["components"][c]["state"]
        for c in ("ReviewsExampleGen", "Transform", "Trainer", "Evaluator", "Pusher")
    } == {"complete"}
    # Span 2 has span 1's words, so the same vocabulary: it starts from span 1's champion,
    # and its first training loss is about where that model ended, far below a fresh start's.
    warm = summary["training"]["warm_start"]
    assert warm is not None and "from" in warm, warm
    assert warm["from"].startswith(
        os.path.join(str(imdb_run.output), "pipelines", "imdb-text-encoder", "Trainer", "model")
    )
    before = training_losses(imdb_run.output)[-1]
    after = training_losses(imdb_next_span.output)
    fresh = training_losses(imdb_run.output)[0]
    assert after[0] < (before + fresh) / 2, (fresh, before, after)
    assert summary["blessed"] is True
    assert summary["pushed_version"] > imdb_run.summary["pushed_version"]
    assert summary["registered"]["version"] == "2"
    versions = sorted(
        os.listdir(os.path.join(imdb_next_span.output, "serving_model", "imdb-text-encoder"))
    )
    assert versions == [imdb_run.summary["pushed_version"], summary["pushed_version"]]


@pytest.mark.slow
def test_a_window_of_two_spans_trains_on_both_and_validates_the_newest(imdb_next_span):
    """The next span's run has a window of two spans (--spans 2): a second ExampleGen reads
    spans 1 and 2 for Transform and the Trainer; the newest span alone is validated and
    evaluated on (its reruns: test_reruns_are_served_from_cache_without_a_duplicate_push)."""
    summary = imdb_next_span.summary
    assert summary["data"] == {
        "data_layout": "aclimdb",
        "span": 2,
        "window": {"data_layout": "aclimdb", "span": 2, "spans": "1,2"},
    }
    states = {node: c["state"] for node, c in summary["components"].items()}
    assert states["ReviewsExampleGenWindow"] == states["Trainer"] == "complete"
    assert summary["training"]["train_examples"] == 48 + 64  # spans 1 and 2
    # Evaluated on span 2's test split alone (64 reviews), not on span 1's 48 as well.
    assert summary["metrics"]["example_count"] == 64


def training_losses(output) -> list:
    """The training loss after each evaluation interval of the newest Trainer run in `output`."""
    import glob

    runs = glob.glob(
        os.path.join(
            str(output),
            "pipelines",
            "imdb-text-encoder",
            "Trainer",
            "model_run",
            "*",
            "history.json",
        )
    )
    return json.load(open(max(runs, key=os.path.getmtime)))["history"]["loss"]


def test_a_drifted_span_is_stopped_before_training_and_stays_stopped(imdb_run, tmp_path):
    """A second span of positive reviews only (a CSV, another layout) against the champion's
    data (span 1, half positive): DistributionValidator's label check stops the run, and a
    rerun on the same span is stopped again (its statistics are not the baseline)."""
    import csv
    import shutil

    output = copy_output(imdb_run.output, tmp_path / "out")
    spans = shutil.copytree(imdb_run.data.parent, tmp_path / "imdb")
    (spans / "span-2").mkdir()
    with open(spans / "span-2" / "reviews.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("text", "label")] + [(text, 1) for text in POSITIVE * 6])
    args = list(imdb_run.args)
    args[args.index("--data") + 1] = spans / "span-{SPAN}"
    for _ in range(2):
        result = run_cli("run", "--output", output, *args, check=False)
        assert result.code == 1, result.stderr[-2000:]
        (summary,) = result.lines
        error = summary["error"]
        assert "DistributionValidator found drift from the champion's data" in error, error
        assert "split 'train' against 'train', feature 'label'" in error, error
        assert "Jensen-Shannon divergence" in error and "0.1" in error, error
        assert "--drift-thresholds" in error
    assert (
        only_version(os.path.join(output, "serving_model", "imdb-text-encoder"))
        == (imdb_run.summary["pushed_version"])
    )


@pytest.mark.slow
def test_a_span_in_another_language_is_stopped_by_its_word_distribution(imdb_run, tmp_path):
    """A second span of German reviews, half positive (the label balance holds): the reviews'
    word distribution moved far beyond its threshold."""
    import csv
    import shutil

    output = copy_output(imdb_run.output, tmp_path / "out")
    spans = shutil.copytree(imdb_run.data.parent, tmp_path / "imdb")
    (spans / "span-2").mkdir()
    with open(spans / "span-2" / "reviews.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(
            [("text", "label")] + [(text, 1 - i % 2) for i, text in enumerate(GERMAN_REVIEWS * 12)]
        )
    args = list(imdb_run.args)
    args[args.index("--data") + 1] = spans / "span-{SPAN}"
    result = run_cli("run", "--output", output, *args, check=False)
    assert result.code == 1, result.stderr[-2000:]
    error = result.lines[0]["error"]
    assert "feature 'text_tokens'" in error and "0.05" in error, error
    assert "feature 'label'" not in error, error


@pytest.mark.slow
def test_a_model_under_the_threshold_is_not_pushed_or_registered(imdb_run, imdb_tuned):
    """The tuned run's model (three training steps: near chance), held to 0.99 accuracy and to
    the session run's blessed model."""
    summary = imdb_tuned.summary
    assert summary["components"]["Trainer"]["state"] == "complete"
    assert summary["blessed"] is False
    assert summary["pushed_model"] is None and summary["registered"] is None
    failures = summary["blessing_failures"]
    assert any(f.startswith("binary_accuracy value on overall") for f in failures), failures
    assert any("change vs baseline" in f for f in failures), failures
    assert (
        only_version(os.path.join(imdb_tuned.output, "serving_model", "imdb-text-encoder"))
        == imdb_run.summary["pushed_version"]
    )
    (version,) = run_cli("registry", "list", "--output", imdb_tuned.output).lines
    assert version["aliases"] == ["champion"]  # still one version, still the champion


def test_a_failed_run_exits_1_naming_the_file(imdb_run, tmp_path):
    import shutil

    data = shutil.copytree(imdb_run.data, tmp_path / "data")
    (data / "aclImdb" / "train" / "pos" / "50_9.txt").write_bytes(b"\xff\xfe bad bytes")
    result = run_cli(
        "run",
        "--task",
        "imdb",
        "--data",
        data,
        "--output",
        tmp_path / "out",
        "--preset",
        "tiny",
        "--registry",
        "none",
        check=False,
    )
    assert result.code == 1
    (summary,) = result.lines
    assert summary["status"] == "failed"
    assert "train/pos/50_9.txt: not valid UTF-8 at byte 0" in summary["error"]
    assert "train/pos/50_9.txt: not valid UTF-8 at byte 0" in result.stderr


@pytest.mark.slow
def test_the_tuner_searches_and_the_trainer_trains_with_the_best_values(imdb_tuned):
    import glob

    def only(pattern: str) -> str:
        (path,) = glob.glob(pattern)
        return path

    summary = imdb_tuned.summary
    assert summary["status"] == "succeeded"
    assert summary["components"]["Transform"]["state"] == "cached"  # the same data and preset
    assert summary["components"]["Tuner"]["state"] == "complete"
    root = os.path.join(imdb_tuned.output, "pipelines", "imdb-text-encoder")
    trials = json.loads(open(only(f"{root}/Tuner/tuner_results/*/tuner_results.json")).read())
    assert len(trials) == 2
    best = json.loads(
        open(only(f"{root}/Tuner/best_hyperparameters/*/best_hyperparameters.txt")).read()
    )["values"]
    assert set(best) == {"num_layers", "d_model", "peak_learning_rate", "dropout"}
    assert best["num_layers"] in (1, 2, 4) and best["d_model"] in (64, 128, 256)
    trainer_runs = glob.glob(f"{root}/Trainer/model_run/*/history.json")
    config = json.loads(open(max(trainer_runs, key=os.path.getmtime)).read())["config"]
    assert (config["num_layers"], config["d_model"]) == (best["num_layers"], best["d_model"])
    assert config["peak_learning_rate"] == pytest.approx(best["peak_learning_rate"])
    assert config["dropout"] == pytest.approx(best["dropout"])
    assert config["max_length"] == 32  # the rest is the tiny preset's


def test_the_run_report_renders_in_headless_chromium(imdb_run):
    """The report of a real run, opened in a real browser: tables, plots and heatmaps render
    from the page alone (no network), and a screenshot is kept beside it."""
    from playwright.sync_api import sync_playwright

    from tests.browser_util import open_page

    report = imdb_run.summary["report"]
    requests = []
    with sync_playwright() as playwright:
        browser, page = open_page(playwright, "file://" + report, requests)
        try:
            assert page.title() == "Run report: imdb-text-encoder"
            metrics = page.locator("#metrics-overall tbody tr")
            assert metrics.count() >= 5 and metrics.first.is_visible()
            assert "binary_accuracy" in page.locator("#metrics-overall").inner_text()
            assert page.locator("#metrics-slices tbody tr").count() >= 2
            # Every plot decoded to real pixels and laid out at a visible size.
            sizes = page.eval_on_selector_all(
                "img.plot",
                "images => images.map(i => [i.className, i.complete, "
                "i.naturalWidth, i.getBoundingClientRect().width])",
            )
            assert all(
                complete and natural > 0 and shown > 100 for _, complete, natural, shown in sizes
            ), sizes
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


SHOP_REVIEWS = [
    ("The kettle boils fast and looks great on the counter.", 1),
    ("Sturdy backpack, comfortable straps, worth every penny.", 1),
    ("These headphones sound clear and the battery lasts all week.", 1),
    ("Lovely soft towels, they wash well and dry quickly.", 1),
    ("The blender broke after two days, a waste of money.", 0),
    ("Cheap zipper, the bag tore on the first trip.", 0),
    ("The charger stopped working and support never answered.", 0),
    ("Scratchy fabric and the seams came apart in the wash.", 0),
]


def write_shop_reviews(folder) -> None:
    """`folder/reviews.csv`: SHOP_REVIEWS eight times, with a `text,label` header."""
    import csv

    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "reviews.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("text", "label")] + SHOP_REVIEWS * 8)


@pytest.mark.slow
def test_a_run_on_other_data_is_a_pipeline_of_its_own_and_the_champion_stays(imdb_run, tmp_path):
    """The README's own-data step after a first run: shop reviews in a folder of their own,
    run into the same output, are named after their folder, registered under that name with a
    model card about them, and leave the review pipeline's champion as it was."""
    output = copy_output(imdb_run.output, tmp_path / "out")
    folder = tmp_path / "shop-reviews"
    write_shop_reviews(folder)
    result = run_cli(
        "run",
        "--output",
        output,
        "--task",
        "imdb",
        "--data",
        folder,
        "--preset",
        "tiny",
        "--train-steps",
        "20",
        "--eval-steps",
        "1",
        "--blessing-threshold",  # a first model of its pipeline, whatever it learnt in 20 steps
        "0",
    )
    (summary,) = result.lines
    name = "shop-reviews-text-encoder"
    assert summary["pipeline_name"] == name and f"pipeline {name}: named after" in result.stderr
    assert summary["registered"]["name"] == name and summary["registered"]["version"] == "1"
    assert summary["pushed_model"].startswith(os.path.join(output, "serving_model", name, ""))
    # Not warm-started from the movie reviews' model: its pipeline's store knows no other.
    assert summary["training"]["warm_start"] is None
    (champion,) = run_cli("registry", "--output", output, "show", "imdb-text-encoder").lines
    assert (champion["version"], champion["aliases"]) == ("1", ["champion"])
    assert champion["tags"]["pipeline_run_id"] == imdb_run.summary["run_id"]
    with open(summary["report"], encoding="utf-8") as f:
        page = f.read()
    start = page.index('<section id="model-card">')
    card = page[start : page.index("</section>", start)]
    assert str(folder) in card and "csv layout" in card
    assert "movie" not in card.lower() and "rating" not in card.lower()


@pytest.mark.slow
def test_pretraining_reads_the_datas_unlabelled_folder_through_beam_and_transform(tmp_path):
    """CSV reviews with an `unlabeled/` folder beside them and `--set pretrain_epochs=1`: the
    ExampleGen reads the folder (Beam) into its own split, Transform tokenizes it with the
    training split's vocabulary, and the Trainer pretrains on both, fits on the labelled
    reviews alone and says so before it starts."""
    import glob

    folder = tmp_path / "shop-reviews"
    write_shop_reviews(folder)
    (folder / "unlabeled").mkdir()
    texts = [text for text, _ in SHOP_REVIEWS] * 5  # 40 texts without labels
    for i, text in enumerate(texts[:30]):
        (folder / "unlabeled" / f"{i}.txt").write_text(text, "utf-8")
    with open(folder / "unlabeled" / "more.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": text}) + "\n" for text in texts[30:])
    output = tmp_path / "out"
    result = run_cli(
        "run",
        "--output",
        output,
        "--task",
        "imdb",
        "--data",
        folder,
        "--preset",
        "tiny",
        "--train-steps",
        "10",
        "--eval-steps",
        "1",
        "--set",
        "pretrain_epochs=1",
        "--blessing-threshold",
        "0",
    )
    (summary,) = result.lines
    assert summary["status"] == "succeeded"
    train = summary["training"]["train_examples"]
    # The cost before Transform (StatisticsGen's counts) and the Trainer's plan say both.
    assert f"1 epochs of {train + 40} texts: {train} training, 40 unlabelled" in result.stderr
    assert f"the {train} training texts (labels unread) and 40 unlabelled" in result.stderr
    root = output / "pipelines" / "shop-reviews-text-encoder"
    (transformed,) = glob.glob(str(root / "Transform" / "transformed_examples" / "*"))
    records = tf.data.TFRecordDataset(
        glob.glob(os.path.join(transformed, "Split-unlabeled", "*")), compression_type="GZIP"
    )
    labels = [
        tf.train.Example.FromString(r.numpy()).features.feature["label"].int64_list.value[0]
        for r in records
    ]
    assert labels == [-1] * 40
    (history,) = glob.glob(str(root / "Trainer" / "model_run" / "*" / "history.json"))
    with open(history, encoding="utf-8") as f:
        pretraining = json.load(f)["pretraining"]
    assert (pretraining["texts"], pretraining["unlabeled_texts"]) == (train + 40, 40)
    with open(summary["report"], encoding="utf-8") as f:
        page = f.read()
    assert f"over {train + 40} texts (40 of them unlabelled)" in page  # the model card
