"""The translation pipeline end to end through the CLI, on the embedded corpus (plus one empty
pair), then `predict` on the pushed model."""
import os
import shutil

import pytest
import tensorflow as tf

from pipeline import configs
from tests.e2e.cli_util import cli, pipeline_components
from tests.report.html_util import check_report

pytestmark = pytest.mark.e2e
COMPONENTS = pipeline_components("ParallelCorpusExampleGen")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("translation")
    data = root / "data"
    shutil.copytree(configs.EMBEDDED_DATA_DIR / "translation", data)
    for name, line in (("train.de", "Ein Satz ohne Übersetzung.\n"), ("train.en", "\n")):
        with open(data / name, "a", encoding="utf-8") as f:
            f.write(line)
    (summary,) = cli("run", "--task", "translation", "--data", str(data), "--output",
                     str(root / "out"), "--preset", "tiny", "--train-steps", "150",
                     "--eval-steps", "2", "--blessing-threshold", "0")
    return summary


def test_every_component_ran_and_bleu_gated_the_push(run):
    assert run["status"] == "succeeded"
    assert set(run["components"]) == COMPONENTS
    assert run["metrics"]["example_count"] == 120
    assert 0 < run["metrics"]["bleu"] <= 100
    assert 0 < run["metrics"]["token_accuracy"] <= 1
    assert run["blessed"] is True and run["pushed_model"]
    assert run["data"] == {"pairs": 600, "skipped_empty_pairs": 1}
    check_report(run["report"])  # with attention heatmaps


def test_the_pushed_model_translates_raw_strings(run):
    sources = ["Eine Frau sitzt am Strand.", "Zwei Männer tanzen im Park."]
    model = tf.saved_model.load(run["pushed_model"])  # plain TensorFlow
    out = model.signatures["translate"](source=tf.constant(sources))
    assert out["translation"].dtype == tf.string and out["translation"].shape == (2,)
    rows = cli("predict", "--model", os.path.dirname(run["pushed_model"]), *sources)
    assert [r["source"] for r in rows] == sources
    assert [r["translation"] for r in rows] == [t.decode() for t in out["translation"].numpy()]
    assert rows[0]["model"] == run["pushed_model"]
