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


def data_root_with_every_task(tmp_path):
    data_root = tmp_path / "data"
    data_root.mkdir()
    for task in TASKS:
        os.symlink(TASKS[task].default_data_dir, data_root / task)
    return data_root


def test_a_runner_script_compiles_its_pipeline_as_a_script(tmp_path):
    """One script run as a user runs it (a fresh interpreter, the repository off sys.path)."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = subprocess.run(
        [sys.executable, str(configs.REPO_ROOT / "kubeflow" / "imdb_runner.py")],
        cwd=workdir, capture_output=True, text=True, timeout=300,
        env={**os.environ, **ENVIRONMENT, "DATA_ROOT": str(data_root_with_every_task(tmp_path)),
             "TFXT_TRAIN_STEPS": "20", "TFXT_TASK": "translation"})
    assert result.returncode == 0, result.stderr[-3000:]
    path = workdir / result.stdout.strip().splitlines()[-1]
    job = json.loads(path.read_text())
    # The script names its task (TFXT_TASK does not change it); other options come from TFXT_*.
    assert path.name == "imdb-text-encoder.json"
    assert job["pipelineSpec"]["pipelineInfo"]["name"] == "imdb-text-encoder"
    assert json.loads(job["runtimeConfig"]["parameterValues"]["train_args"]) == {"num_steps": 20}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_each_task_runner_compiles_its_pipeline_with_options_from_the_environment(
        tmp_path, monkeypatch, task):
    import runpy

    monkeypatch.chdir(tmp_path)
    environ = {**ENVIRONMENT, "DATA_ROOT": str(data_root_with_every_task(tmp_path)),
               "TFXT_PRESET": "tiny", "TFXT_TUNE": "1", "TFXT_TUNER_TRIALS": "3"}
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    runner = runpy.run_path(str(configs.REPO_ROOT / "kubeflow" / f"{task}_runner.py"))
    path = tmp_path / runner["compile_task"](task)
    job = json.loads(path.read_text())
    tasks = job["pipelineSpec"]["root"]["dag"]["tasks"]
    assert path.name == f"{job['pipelineSpec']['pipelineInfo']['name']}.json"
    assert job["pipelineSpec"]["pipelineInfo"]["name"].startswith(f"{task}-")
    assert "Tuner" in tasks
    trainer = tasks["Trainer"]["inputs"]["parameters"]["custom_config"]["runtimeValue"]
    assert json.loads(trainer["constant"])["preset"] == "tiny"
