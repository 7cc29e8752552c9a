"""The console scripts as a user runs them, in fresh processes: tfx-transformers and the TFX
CLI (the rest of the CLI is tested in-process, on the session's run)."""

import json
import os
import subprocess
import sys

import pytest

from pipeline import configs
from tests.e2e.cli_util import copy_output

pytestmark = pytest.mark.e2e
BIN = os.path.dirname(sys.executable)


def run(command, env=None):
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=configs.REPO_ROOT,
        env={**os.environ, **(env or {})},
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_the_console_script_predicts_and_exits_cleanly(imdb_run):
    """Through the deprecated spelling `predict --model`, which still works for a release."""
    result = run(
        [
            os.path.join(BIN, "tfx-transformers"),
            "predict",
            "--model",
            str(imdb_run.serving_dir),
            "a wonderful film, I loved it",
        ]
    )
    (row,) = [json.loads(line) for line in result.stdout.strip().splitlines()]
    assert row["label"] == "positive" and row["model"] == imdb_run.summary["pushed_model"]
    assert "warning: predict --model is deprecated; use --saved-model" in result.stderr
    # No traceback from TensorFlow's finalizers at interpreter shutdown.
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr


@pytest.mark.slow
def test_tfx_cli_pipeline_create_and_run_create(imdb_next_span, imdb_reruns, tmp_path):
    """The TFX CLI's DSL file takes the same options from TFXT_* variables: the reruns' run
    (the next span's, with its window), rerun on a copy of their output, is served from cache."""
    output = copy_output(imdb_reruns.output, tmp_path / "out")
    env = {
        "TFXT_" + option.lstrip("-").replace("-", "_").upper(): str(value)
        for option, value in zip(imdb_reruns.args[::2], imdb_reruns.args[1::2])
    }
    env.update(LOCAL_HOME=str(tmp_path / "tfx_home"), TFXT_OUTPUT=output)
    tfx = os.path.join(BIN, "tfx")
    run(
        [
            tfx,
            "pipeline",
            "create",
            "--engine",
            "local",
            "--pipeline_path",
            "pipeline/local_runner.py",
        ],
        env,
    )
    run([tfx, "run", "create", "--engine", "local", "--pipeline_name", "imdb-text-encoder"], env)
    from pipeline import run_summary

    summary = run_summary.summarize(
        os.path.join(output, "metadata", "imdb-text-encoder", "metadata.sqlite"),
        "imdb-text-encoder",
    )
    first = imdb_next_span.summary
    assert summary["run_id"] not in (first["run_id"], imdb_reruns.third["run_id"])
    # The same pipeline as `tfx-transformers run` built: data, training and evaluation cached
    # (the push destination and registry, under the copied output, differ).
    states = {name: c["state"] for name, c in summary["components"].items()}
    cached = ("ReviewsExampleGen", "ReviewsExampleGenWindow", "Transform", "Trainer", "Evaluator")
    assert {states[name] for name in cached} == {"cached"}
    assert summary["pushed_version"] == first["pushed_version"]
    assert summary["registered"]["version"] == "2"
    versions = os.listdir(os.path.join(output, "serving_model", "imdb-text-encoder"))
    assert max(versions) == first["pushed_version"] and len(versions) == 2
