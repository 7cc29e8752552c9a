"""The IMDB pipeline with the KerasHub BERT family, from a tiny local preset, end to end."""
import io
import json
import os
import subprocess
import sys

import pytest

from pipeline.runner import build_local_pipeline, run_local
from tests.conftest import NEGATIVE, POSITIVE, write_aclimdb

pytestmark = pytest.mark.e2e

CLASSIFY = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401
model = tf.saved_model.load(sys.argv[1])
texts = json.loads(sys.argv[2])
print(json.dumps(model.signatures["classify_text"](text=tf.constant(texts))["label"].numpy().tolist()))
"""


def test_bert_pipeline_pushes_a_model_that_classifies_raw_text(tiny_bert_preset, tmp_path):
    data = write_aclimdb(tmp_path / "data", copies=3)
    pipeline, paths = build_local_pipeline(
        task="imdb", model="bert", data_dir=str(data), output_dir=str(tmp_path / "out"),
        preset="tiny", model_overrides={"backbone_preset": tiny_bert_preset},
        train_steps=80, eval_steps=2)
    summary = run_local(pipeline, paths, stream=io.StringIO())

    assert summary["pipeline_name"] == "imdb-bert"
    assert {c["state"] for c in summary["components"].values()} == {"complete"}
    assert summary["blessed"] is True, summary["blessing_failures"]
    assert summary["metrics"]["binary_accuracy"] >= 0.6
    pushed = summary["pushed_model"]
    assert os.path.dirname(pushed) == paths["serving_model_dir"]

    texts = POSITIVE[:3] + NEGATIVE[:3]
    result = subprocess.run([sys.executable, "-c", CLASSIFY, pushed, json.dumps(texts)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    labels = json.loads(result.stdout.strip().splitlines()[-1])
    assert sum(label == want for label, want in zip(labels, [1, 1, 1, 0, 0, 0])) >= 5
