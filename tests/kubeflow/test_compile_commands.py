"""`tfx-transformers compile` and the kubeflow/<task>_runner.py scripts, as a user runs them."""

import json
import os

import pytest

from pipeline import configs
from pipeline.cli import main
from pipeline.tasks import TASKS

ENVIRONMENT = {
    "GOOGLE_CLOUD_PROJECT": "proj",
    "PIPELINE_ROOT": "gs://bucket/tt",
    "PIPELINE_IMAGE": "img:1",
}


def test_compile_writes_the_pipeline_job_and_says_where(tmp_path, monkeypatch, capsys):
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    output = tmp_path / "job.json"
    code = main(
        [
            "compile",
            "--task",
            "imdb",
            "--data",
            TASKS["imdb"].default_data_dir,
            "--preset",
            "tiny",
            "--train-steps",
            "50",
            "--tune",
            "--tuner-trials",
            "2",
            "--output-file",
            str(output),
        ]
    )
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


@pytest.mark.parametrize("task", sorted(TASKS))
def test_each_runner_script_compiles_its_task_with_options_from_the_environment(
    tmp_path, monkeypatch, capsys, task
):
    """The script run as `python kubeflow/<task>_runner.py` runs it (its __main__ block)."""
    import runpy

    monkeypatch.chdir(tmp_path)
    environ = {
        **ENVIRONMENT,
        "DATA_ROOT": str(data_root_with_every_task(tmp_path)),
        "TFXT_PRESET": "tiny",
        "TFXT_TUNE": "1",
        "TFXT_TUNER_TRIALS": "3",
        "TFXT_TRAIN_STEPS": "20",
        "TFXT_TASK": "not-the-scripts-task",
    }
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    runpy.run_path(str(configs.REPO_ROOT / "kubeflow" / f"{task}_runner.py"), run_name="__main__")
    path = tmp_path / capsys.readouterr().out.strip().splitlines()[-1]
    job = json.loads(path.read_text())
    name = job["pipelineSpec"]["pipelineInfo"]["name"]
    # The script names its task (TFXT_TASK does not change it); the rest comes from TFXT_*.
    assert path.name == f"{name}.json" and name.startswith(f"{task}-")
    assert json.loads(job["runtimeConfig"]["parameterValues"]["train_args"]) == {"num_steps": 20}
    tasks = job["pipelineSpec"]["root"]["dag"]["tasks"]
    assert "Tuner" in tasks
    trainer = tasks["Trainer"]["inputs"]["parameters"]["custom_config"]["runtimeValue"]
    assert json.loads(trainer["constant"])["preset"] == "tiny"
