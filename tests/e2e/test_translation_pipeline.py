"""The translation pipeline end to end through the CLI, on the embedded corpus (plus one empty
pair), then `predict` on the pushed model, and a rerun held to an unreachable BLEU."""

import json
import os
import shutil

import pytest
import tensorflow as tf

from pipeline import configs
from tests.e2e.cli_util import copy_output, only_version, pipeline_components, run_cli
from tests.report.html_util import check_report

# Each of these runs its own pipeline: the slow tier (the IMDB run is the default tier's).
pytestmark = [pytest.mark.e2e, pytest.mark.slow]
COMPONENTS = pipeline_components("ParallelCorpusExampleGen", registry=False)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("translation")
    data = root / "translation"
    shutil.copytree(configs.EMBEDDED_DATA_DIR / "translation", data)
    for name, line in (("train.de", "Ein Satz ohne Übersetzung.\n"), ("train.en", "\n")):
        with open(data / name, "a", encoding="utf-8") as f:
            f.write(line)
    # The tiny preset at a higher rate learns the corpus's grammar in 200 steps (BLEU ~35).
    args = [
        "--task",
        "translation",
        "--data",
        data,
        "--preset",
        "tiny",
        "--train-steps",
        "200",
        "--set",
        "peak_learning_rate=0.005",
        # The default recipe's vocabulary (one over both languages), whose search writes the
        # ids of the training targets' words (output_vocabulary's default): the analyzers
        # behind them must run in the real Transform component, whose deep copy of a second
        # analysis phase's input fails.
        "--set",
        "shared_vocabulary=true",
        "--eval-steps",
        "2",
        "--registry",
        "none",
    ]
    (summary,) = run_cli("run", "--output", root / "out", *args).lines
    return summary, root, args


def test_every_component_ran_and_bleu_was_measured(run):
    summary, _, _ = run
    assert summary["status"] == "succeeded"
    assert summary["pipeline_name"] == "translation-translator"
    assert set(summary["components"]) == COMPONENTS
    assert summary["metrics"]["example_count"] == 120
    assert 20 <= summary["metrics"]["bleu"] < 100  # the default gate: BLEU >= 20
    assert 0.5 < summary["metrics"]["token_accuracy"] < 1
    assert summary["blessed"] is True and summary["pushed_model"]
    assert summary["data"] == {
        "data_layout": "parallel",
        "pairs": 600,
        "skipped_empty_pairs": 1,
        "span": 0,
    }
    check_report(summary["report"])  # with attention heatmaps


def test_the_pushed_model_translates_raw_strings(run):
    summary, _, _ = run
    sources = ["Eine Frau sitzt am Strand.", "Zwei Männer tanzen im Park."]
    model = tf.saved_model.load(summary["pushed_model"])  # plain TensorFlow
    out = model.signatures["translate"](source=tf.constant(sources))
    assert out["translation"].dtype == tf.string and out["translation"].shape == (2,)
    rows = run_cli(
        "predict", "--saved-model", os.path.dirname(summary["pushed_model"]), *sources
    ).lines
    assert [r["source"] for r in rows] == sources
    assert [r["translation"] for r in rows] == [t.decode() for t in out["translation"].numpy()]
    assert rows[0]["model"] == summary["pushed_model"]


def test_infer_translates_a_file_of_sentences_as_translate_does(run, tmp_path):
    summary, root, _ = run
    output = copy_output(root / "out", tmp_path / "out")
    folder = tmp_path / "sentences"
    folder.mkdir()
    sources = ["Eine Frau sitzt am Strand.", "Zwei Männer tanzen im Park."]
    (folder / "captions.txt").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (inferred,) = run_cli(
        "infer", "--task", "translation", "--data", folder, "--output", output
    ).lines
    assert inferred["predictions"] == 2
    rows = [
        json.loads(line)
        for path in inferred["prediction_files"]
        for line in open(path, encoding="utf-8")
    ]
    model = tf.saved_model.load(summary["pushed_model"])
    expected = model.signatures["translate"](source=tf.constant(sources))["translation"]
    assert sorted((r["id"], r["source"], r["translation"]) for r in rows) == [
        ("captions.txt:1", sources[0], expected[0].numpy().decode()),
        ("captions.txt:2", sources[1], expected[1].numpy().decode()),
    ]


def test_english_sources_are_stopped_as_drift_from_the_german_the_champion_learned(run, tmp_path):
    _, root, args = run
    output = copy_output(root / "out", tmp_path / "out")
    data = tmp_path / "swapped"
    shutil.copytree(configs.EMBEDDED_DATA_DIR / "translation", data)
    for split in ("train", "val"):  # English on both sides
        shutil.copy(data / f"{split}.en", data / f"{split}.de")
    args = list(args)
    args[args.index("--data") + 1] = data
    # The same pipeline on purpose (a folder of another name is a pipeline of its own).
    args += ["--pipeline-name", "translation-translator"]
    result = run_cli("run", "--output", output, *args, check=False)
    assert result.code == 1, result.stderr[-2000:]
    error = result.lines[0]["error"]
    assert "DistributionValidator found drift from the champion's data" in error, error
    assert "feature 'source_tokens'" in error, error


# The slow tier: tests/pipeline/test_gates.py checks TFMA refuses BLEU under the bound in a
# second, and the IMDB run checks a refused model is neither pushed nor registered.
@pytest.mark.slow
def test_a_model_under_the_bleu_threshold_is_refused_and_not_pushed(run, tmp_path):
    summary, root, args = run
    output = copy_output(root / "out", tmp_path / "out")
    (strict,) = run_cli("run", "--output", output, *args, "--blessing-threshold", "100").lines
    assert strict["components"]["Trainer"]["state"] == "cached"  # the same model
    assert strict["components"]["Evaluator"]["state"] == "complete"
    assert strict["metrics"]["bleu"] < 100
    assert strict["blessed"] is False and strict["pushed_model"] is None
    assert any(f.startswith("bleu value on overall") for f in strict["blessing_failures"])
    assert only_version(os.path.dirname(summary["pushed_model"])) == summary["pushed_version"]
