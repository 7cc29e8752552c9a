"""The optional Tuner: a two-trial search on the tiny preset, its best values in the Trainer."""
import glob
import json

import pytest

from tests.conftest import write_aclimdb
from tests.e2e.cli_util import cli

pytestmark = pytest.mark.e2e


def only(pattern: str) -> str:
    (path,) = glob.glob(pattern)
    return path


def test_tune_runs_two_trials_and_the_trainer_trains_with_the_best(tmp_path):
    data = write_aclimdb(tmp_path / "data")
    out = tmp_path / "out"
    (summary,) = cli("run", "--task", "imdb", "--data", str(data), "--output", str(out),
                     "--preset", "tiny", "--train-steps", "3", "--eval-steps", "1",
                     "--tune", "--tuner-trials", "2", "--registry", "none")
    assert summary["status"] == "succeeded"
    assert "Tuner" in summary["components"]
    root = out / "pipelines" / "imdb-transformer"
    trials = json.loads(open(only(f"{root}/Tuner/tuner_results/*/tuner_results.json")).read())
    assert len(trials) == 2
    best = json.loads(open(only(
        f"{root}/Tuner/best_hyperparameters/*/best_hyperparameters.txt")).read())["values"]
    assert set(best) == {"layers", "d_model", "learning_rate", "dropout"}
    assert best["layers"] in (1, 2, 4) and best["d_model"] in (64, 128, 256)
    config = json.loads(open(only(f"{root}/Trainer/model_run/*/history.json")).read())["config"]
    assert (config["num_layers"], config["d_model"]) == (best["layers"], best["d_model"])
    assert config["peak_learning_rate"] == pytest.approx(best["learning_rate"])
    assert config["dropout"] == pytest.approx(best["dropout"])
    assert config["vocab_size"] == 500  # the rest is the tiny preset's
