"""The console scripts, as a user runs them: tfx-transformers and the TFX CLI."""
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import write_aclimdb
from tests.report.html_util import check_report

pytestmark = pytest.mark.e2e
BIN = os.path.dirname(sys.executable)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(command, env=None, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, **(env or {})}, timeout=600, **kwargs)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_run_then_predict(tmp_path):
    data = write_aclimdb(tmp_path / "data", copies=2)
    result = run([os.path.join(BIN, "tfx-transformers"), "run", "--task", "imdb", "--model",
                  "transformer", "--data", str(data), "--output", str(tmp_path / "out"),
                  "--preset", "tiny", "--train-steps", "40", "--eval-steps", "2"])
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "succeeded"
    assert summary["pipeline_name"] == "imdb-transformer" and summary["run_id"]
    assert summary["blessed"] is True
    assert summary["components"]["Trainer"]["seconds"] > 0
    assert "[10/12] Pusher done" in result.stderr
    check_report(summary["report"])
    listed = run([os.path.join(BIN, "tfx-transformers"), "registry", "--output",
                  str(tmp_path / "out"), "list"])
    (version,) = [json.loads(line) for line in listed.stdout.strip().splitlines()]
    assert (version["name"], version["version"], version["aliases"]) == (
        "imdb-transformer", "1", ["champion"])
    assert version["metrics"]["binary_accuracy"] == summary["metrics"]["binary_accuracy"]

    # `report` names the run's page, and rebuilds it from MLMD on request.
    out = str(tmp_path / "out")
    latest = run([os.path.join(BIN, "tfx-transformers"), "report", "--output", out])
    assert latest.stdout.strip() == summary["report"]
    rebuilt = run([os.path.join(BIN, "tfx-transformers"), "report", "--output", out,
                   "--run", summary["run_id"]]).stdout.strip()
    assert rebuilt.startswith(os.path.join(out, "reports", "imdb-transformer", ""))
    rebuilt_page = check_report(rebuilt)
    assert rebuilt_page.tables["metrics-overall"] == check_report(summary["report"]).tables[
        "metrics-overall"]

    base = os.path.dirname(summary["pushed_model"])
    predicted = run([os.path.join(BIN, "tfx-transformers"), "predict", "--model", base,
                     "a wonderful film, I loved it", "Café — awful, boring mess"])
    rows = [json.loads(line) for line in predicted.stdout.strip().splitlines()]
    assert [r["text"] for r in rows] == ["a wonderful film, I loved it", "Café — awful, boring mess"]
    assert [r["label"] for r in rows] == ["positive", "negative"]
    assert all(abs(sum(r["probabilities"]) - 1) < 1e-4 for r in rows)
    assert rows[0]["model"] == summary["pushed_model"]


def test_run_fails_with_the_file_named(tmp_path):
    data = write_aclimdb(tmp_path / "data")
    (data / "aclImdb" / "train" / "pos" / "50_9.txt").write_bytes(b"\xff\xfe bad bytes")
    result = subprocess.run(
        [os.path.join(BIN, "tfx-transformers"), "run", "--task", "imdb", "--data", str(data),
         "--output", str(tmp_path / "out"), "--preset", "tiny"],
        capture_output=True, text=True, cwd=REPO, timeout=600)
    assert result.returncode == 1
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "failed"
    assert "train/pos/50_9.txt: not valid UTF-8 at byte 0" in summary["error"]


def test_tfx_cli_pipeline_create_and_run_create(tmp_path):
    data = write_aclimdb(tmp_path / "data", copies=2)
    env = {"LOCAL_HOME": str(tmp_path / "tfx_home"), "TFXT_DATA": str(data),
           "TFXT_OUTPUT": str(tmp_path / "out"), "TFXT_PRESET": "tiny",
           "TFXT_TRAIN_STEPS": "40", "TFXT_EVAL_STEPS": "2"}
    tfx = os.path.join(BIN, "tfx")
    run([tfx, "pipeline", "create", "--engine", "local", "--pipeline_path",
         "pipeline/local_runner.py"], env)
    run([tfx, "run", "create", "--engine", "local", "--pipeline_name", "imdb-transformer"], env)
    versions = os.listdir(tmp_path / "out" / "serving_model" / "imdb-transformer")
    assert len(versions) == 1 and versions[0].isdigit()
    assert os.path.exists(tmp_path / "out" / "serving_model" / "imdb-transformer" / versions[0]
                          / "saved_model.pb")
