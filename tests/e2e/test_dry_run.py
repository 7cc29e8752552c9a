"""`run --dry-run`: the data read, counted and checked, the plan said with its warnings, and
nothing trained, pushed or registered."""

import os

import pytest

from tests.conftest import write_aclimdb
from tests.e2e.cli_util import run_cli

pytestmark = pytest.mark.e2e


def test_a_dry_run_plans_warns_and_stops_before_transform(tmp_path):
    data = write_aclimdb(tmp_path / "reviews", copies=2)
    result = run_cli(
        "run",
        "--dry-run",
        "--data",
        data,
        "--output",
        tmp_path / "out",
        "--set",
        "max_length=512",
    )
    (summary,) = result.lines
    assert summary["status"] == "planned" and summary["dry_run"] is True
    ran = set(summary["components"])
    assert {"ReviewsExampleGen", "StatisticsGen", "ExampleValidator", "CostEstimate"} <= ran
    assert not ran & {"Transform", "Trainer", "Evaluator", "Pusher", "ModelRegistry"}
    assert summary["pushed_model"] is None and summary["registered"] is None
    assert summary["cost"]["train_examples"] > 0
    assert "plan: 2 classes: negative, positive" in result.stderr
    assert "plan: warning: the run changes the measured preset (max_length=512)" in result.stderr
    assert not os.path.exists(tmp_path / "out" / "serving_model")
    (listed,) = run_cli("runs", "--output", tmp_path / "out").lines
    assert (listed["run_id"], listed["status"]) == (summary["run_id"], "planned")
