"""The IMDB pipeline with the BERT family, from a tiny Hugging Face checkpoint (safetensors),
end to end: its WordPiece vocabulary and the wide path's n-gram counts in a real Transform
component, the Evaluator with tensorflow-text's ops.

The slow tier (about 80 s, the longest test). The default tier covers most of its parts faster:
the pipeline's BERT wiring (tests/pipeline/test_factory.py), the preprocessing_fn from a Hugging
Face checkpoint through tf.Transform's Beam implementation, both fine-tuning phases and the
export answering raw text as the Keras model does (tests/bert/, on the session's BERT run), and
that export in a fresh process (tests/serving/test_fresh_process.py). An Evaluator that loads
tensorflow-text's ops through the custom-ops module runs in this tier only (here, in the
translation pipeline's run, and in tests/serving/test_fresh_process.py's evaluator test)."""

import pytest
import tensorflow as tf

from tests.conftest import NEGATIVE, POSITIVE, write_aclimdb
from tests.e2e.cli_util import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_bert_pipeline_pushes_a_model_that_classifies_raw_text(tiny_bert_checkpoint, tmp_path):
    data = write_aclimdb(tmp_path / "imdb", copies=3)
    (summary,) = run_cli(
        "run",
        "--task",
        "imdb",
        "--model",
        "bert",
        "--bert-preset",
        tiny_bert_checkpoint,
        "--data",
        data,
        "--output",
        tmp_path / "out",
        "--preset",
        "tiny",
        "--train-steps",
        "80",
        "--eval-steps",
        "2",
        "--registry",
        "none",
    ).lines
    assert summary["pipeline_name"] == "imdb-bert"
    assert {c["state"] for c in summary["components"].values()} == {"complete"}
    assert summary["blessed"] is True, summary["blessing_failures"]
    assert summary["metrics"]["binary_accuracy"] >= 0.6
    model = tf.saved_model.load(summary["pushed_model"])  # tensorflow_text is loaded here
    labels = (
        model.signatures["classify_text"](text=tf.constant(POSITIVE[:3] + NEGATIVE[:3]))["label"]
        .numpy()
        .tolist()
    )
    assert sum(label == want for label, want in zip(labels, [1, 1, 1, 0, 0, 0])) >= 5
