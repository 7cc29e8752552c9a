"""`tfx-transformers compile` and the kubeflow/<task>_runner.py scripts, as a user runs them."""
import json
import os
import subprocess
import sys

import pytest

from pipeline import configs
from pipeline.cli import main
from pipeline.tasks import TASKS

ENVIRONMENT = {"GOOGLE_CLOUD_PROJECT": "proj", "PIPELINE_ROOT": "gs://bucket/tt",
               "PIPELINE_IMAGE": "img:1"}


def test_compile_writes_the_pipeline_job_and_says_where(tmp_path, monkeypatch, capsys):
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    output = tmp_path / "job.json"
    code = main(["compile", "--task", "imdb", "--data", TASKS["imdb"].default_data_dir,
                 "--preset", "tiny", "--train-steps", "50", "--tune", "--tuner-trials", "2",
                 "--output-file", str(output)])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["pipeline_job"] == str(output) and printed["image"] == "img:1"
    assert json.loads(printed["parameters"]["train_args"]) == {"num_steps": 50}
    tasks = json.loads(output.read_text())["pipelineSpec"]["root"]["dag"]["tasks"]
    assert "Tuner" in tasks and "ReviewsExampleGen" in tasks


def test_compile_names_missing_settings(monkeypatch, capsys):
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    assert main(["compile", "--task", "imdb"]) == 2
    assert "set GOOGLE_CLOUD_PROJECT, PIPELINE_ROOT, PIPELINE_IMAGE" in capsys.readouterr().err


@pytest.mark.parametrize("task", sorted(TASKS))
def test_each_task_runner_script_compiles_its_pipeline(tmp_path, task):
    data_root = tmp_path / "data"
    data_root.mkdir()
    os.symlink(TASKS[task].default_data_dir, data_root / task)
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = subprocess.run(
        [sys.executable, str(configs.REPO_ROOT / "kubeflow" / f"{task}_runner.py")],
        cwd=workdir, capture_output=True, text=True, timeout=300,
        env={**os.environ, **ENVIRONMENT, "DATA_ROOT": str(data_root), "TRAIN_STEPS": "20"})
    assert result.returncode == 0, result.stderr[-3000:]
    path = workdir / result.stdout.strip().splitlines()[-1]
    job = json.loads(path.read_text())
    assert path.name == f"{job['pipelineSpec']['pipelineInfo']['name']}.json"
    assert json.loads(job["runtimeConfig"]["parameterValues"]["train_args"]) == {"num_steps": 20}
