"""Pipelines as a team runs them: separate `tfx-transformers run` processes registering into one
MLflow tracking server whose backend store is PostgreSQL and which holds the artifacts itself
(--serve-artifacts), started together, and one whose server is down while it registers."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from components.model_registry.backends import from_config, mlflow_config
from components.model_registry.mlflow_registry import RETRY_ENV
from components.model_registry.version import CHAMPION
from tests.conftest import write_aclimdb
from tests.e2e.conftest import tiny_imdb_args
from tests.tracking_server import TrackingServer

pytestmark = pytest.mark.services
NAME = "imdb-text-encoder"


def tiny_imdb(output, data, steps: int = 60, extra=()) -> list:
    """The e2e session run's command (tests/e2e/conftest.py) as a process, `steps` steps."""
    args = [*tiny_imdb_args(data, steps), *extra]
    return [sys.executable, "-m", "pipeline.cli", "run", "--output", str(output), *map(str, args)]


def start(command: list, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def finish(process: subprocess.Popen) -> dict:
    """The run's JSON summary (its last stdout line), with its exit code and stderr's tail."""
    out, err = process.communicate(timeout=1200)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    summary = json.loads(lines[-1]) if lines else {}
    return {**summary, "exit_code": process.returncode, "stderr": err[-4000:]}


@pytest.fixture
def server(postgres_database, tmp_path):
    server = TrackingServer(postgres_database, str(tmp_path / "server-artifacts"), workers=4)
    yield server.start()
    server.stop()


def test_two_pipelines_started_together_both_register_and_the_newest_blessed_is_champion(
    server, tmp_path
):
    data = write_aclimdb(tmp_path / "imdb", copies=3)
    env = {"MLFLOW_TRACKING_URI": server.url}
    # Two trainings of the same model, different in their step count: two SavedModels.
    runs = {
        name: start(tiny_imdb(tmp_path / name, data, steps), env)
        for name, steps in (("a", 60), ("b", 64))
    }
    summaries = {name: finish(process) for name, process in runs.items()}
    for name, summary in summaries.items():
        assert summary["exit_code"] == 0, f"run {name} failed:\n{summary['stderr']}"
        assert summary["blessed"] is True and summary["registered"]["registry"] == "mlflow"
    assert sorted(s["registered"]["version"] for s in summaries.values()) == ["1", "2"]

    registry = from_config(mlflow_config("", tracking_uri=server.url))
    rows = {row["version"]: row for row in registry.versions(NAME)}
    assert set(rows) == {"1", "2"}
    for summary in summaries.values():
        row = rows[summary["registered"]["version"]]
        assert row["saved_model"] == summary["pushed_model"]  # each its own push
        assert row["tags"]["pipeline_run_id"] == summary["run_id"]
        assert row["tags"]["mlmd_model_id"].isdigit() and row["tags"]["blessed"] == "true"
        assert row["metrics"] and row["metrics"] == pytest.approx(
            {k: v for k, v in summary["metrics"].items() if k in row["metrics"]}
        )
        assert row["source"].startswith("mlflow-artifacts:/")
    # The rule (docs/team.md): the champion is the newest blessed version.
    assert [v for v, row in rows.items() if row["aliases"] == [CHAMPION]] == ["2"]

    rerun = finish(start(tiny_imdb(tmp_path / "a", data, 60), env))
    assert rerun["exit_code"] == 0, rerun["stderr"]
    assert rerun["registered"]["version"] == summaries["a"]["registered"]["version"]
    assert len(registry.versions(NAME)) == 2  # nothing new registered
    assert registry.by_alias(NAME, CHAMPION)["version"] == "2"


def test_a_run_whose_server_is_down_keeps_its_push_and_the_next_run_registers_it(server, tmp_path):
    data = write_aclimdb(tmp_path / "imdb", copies=3)
    server.stop()
    env = {
        "MLFLOW_TRACKING_URI": server.url,
        RETRY_ENV: "5",
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    }
    failed = finish(start(tiny_imdb(tmp_path / "out", data), env))
    assert failed["exit_code"] == 1 and failed["status"] == "failed"
    assert f"the MLflow tracking server {server.url} did not answer" in failed["error"]
    (pushed,) = (pathlib.Path(tmp_path) / "out" / "serving_model" / NAME).iterdir()
    assert (pushed / "saved_model.pb").exists()  # the push stands

    server.start()
    again = finish(start(tiny_imdb(tmp_path / "out", data), env))
    assert again["exit_code"] == 0, again["stderr"]
    assert again["components"]["Trainer"]["state"] == "cached"
    assert again["components"]["ModelRegistry"]["state"] == "complete"
    assert again["registered"]["version"] == "1" and again["pushed_model"] == str(pushed)
    row = from_config(mlflow_config("", tracking_uri=server.url)).by_alias(NAME, CHAMPION)
    assert row["version"] == "1" and row["saved_model"] == str(pushed)
