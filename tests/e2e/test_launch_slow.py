"""The other compiled jobs, launched here (`tfx-transformers launch`), each in its own process:

- the IMDB job with two Vertex AI training replicas (the chief and a worker: two local
  processes with Vertex AI's CLUSTER_SPEC and TF_CONFIG, training with
  MultiWorkerMirroredStrategy), launched twice, the second with a baseline;
- the IMDB job compiled for a Kubeflow Pipelines 2 cluster outside Google Cloud (`--target
  kubeflow`, VERTEX_TRAINING=0, BEAM_RUNNER=direct): no resolver, no pre-cache check; launched
  twice, the second with a baseline;
- translation and CIFAR-10, once each on their embedded data;
- a Trainer killed with -9 mid-training, the job launched again: it resumes from its backup.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pipeline.tasks import TASKS
from tests.e2e.launch_util import compile_job, launch, registered_versions
from trainer_module import faults

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

IMDB = TASKS["imdb"].default_data_dir


def twice(root, job):
    """Two launches of `job` into one output, the second with other training arguments."""
    first = launch(job, root / "out", "--param", f"data_dir={IMDB}")
    second = launch(
        job,
        root / "out",
        "--param",
        f"data_dir={IMDB}",
        "--param",
        'train_args={"num_steps": 14}',
    )
    return first, second


def test_two_training_replicas_launched_twice(tmp_path):
    job = compile_job(
        tmp_path, "imdb", {"TRAINER_REPLICA_COUNT": "2"}, preset="tiny", train_steps=12
    )
    first, second = twice(tmp_path, job)
    assert (first["registered"]["version"], first["baseline_model"]) == ("1", None)
    assert second["baseline_model"]["version"] == "1"
    assert second["registered"]["version"] == "2"
    log = open(os.path.join(second["logs"], "Trainer.log")).read()
    # The job's two replicas, each told its role by TF_CONFIG, trained together.
    assert "worker pool 0: 1 x n1-standard-8 with 1 NVIDIA_TESLA_T4" in log
    assert "worker pool 1: 1 x n1-standard-8 with 1 NVIDIA_TESLA_T4" in log
    assert "Training as chief: MultiWorkerMirroredStrategyForKeras with 2 replicas" in log
    assert "Training as worker 0: MultiWorkerMirroredStrategyForKeras with 2 replicas" in log


def test_the_kubeflow_target_launched_twice(tmp_path):
    environ = {"VERTEX_TRAINING": "0", "BEAM_RUNNER": "direct"}
    job = compile_job(tmp_path, "imdb", environ, target="kubeflow", preset="tiny", train_steps=12)
    first, second = twice(tmp_path, job)
    assert first["target"] == second["target"] == "kubeflow"
    assert first["status"] == second["status"] == "succeeded"
    assert first["baseline_model"] is None
    assert second["baseline_model"]["version"] == "1"
    assert second["registered"]["version"] == "2"
    # Without a driver's fingerprint the ExampleGen reads the data every time, and its new
    # Examples (a new artifact name in every cache key after it) make every step run again.
    assert {t["state"] for t in second["tasks"].values()} == {"succeeded"}
    assert registered_versions(tmp_path, "imdb-text-encoder") == [("1", []), ("2", ["champion"])]


@pytest.mark.parametrize(
    "task, example_gen",
    [("translation", "ParallelCorpusExampleGen"), ("cifar10", "ImageExampleGen")],
)
def test_translation_and_cifar10_jobs_launch_on_their_embedded_data(tmp_path, task, example_gen):
    job = compile_job(tmp_path, task, preset="tiny", train_steps=8, blessing_threshold=0.0)
    data = TASKS[task].default_data_dir
    summary = launch(job, tmp_path / "out", "--param", f"data_dir={data}")
    assert summary["tasks"][example_gen]["state"] == "succeeded"
    assert summary["blessed"] is True
    assert summary["registered"]["version"] == "1"
    assert os.path.exists(os.path.join(summary["pushed_model"], "saved_model.pb"))


def test_a_trainer_killed_mid_training_resumes_when_the_job_is_launched_again(tmp_path):
    job = compile_job(
        tmp_path,
        "imdb",
        {"VERTEX_TRAINING": "0"},
        preset="tiny",
        train_steps=40,
        overrides={"evaluations": 4},
    )
    halt_file = tmp_path / "halted.json"
    halting = {faults.HALT_AT: "trainer.backed_up", faults.HALT_FILE: str(halt_file)}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline.cli",
            "launch",
            str(job),
            "--output",
            str(tmp_path / "out"),
            "--param",
            f"data_dir={IMDB}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **halting},
    )
    while not (halt_file.exists() and halt_file.stat().st_size):
        assert process.poll() is None, "the launch ended before its Trainer backed up"
        time.sleep(0.2)
    halted = json.loads(halt_file.read_text())
    assert halted["point"] == "trainer.backed_up"
    os.kill(halted["pid"], signal.SIGKILL)  # the Trainer's process, as a preempted machine
    killed = json.loads(process.communicate(timeout=300)[0].strip().splitlines()[-1])
    assert process.returncode == 1
    assert killed["status"] == "failed" and killed["tasks"]["Trainer"]["state"] == "failed"
    assert killed["tasks"]["Pusher"]["state"] == "skipped"

    resumed = launch(job, tmp_path / "out", "--param", f"data_dir={IMDB}")
    assert resumed["tasks"]["Transform"]["state"] == "cached"
    assert resumed["tasks"]["Trainer"]["state"] == "succeeded"
    assert resumed["training"]["resumed_from_step"] >= 10  # at least one interval of 40 steps
    assert resumed["training"]["train_steps"] == 40
    assert resumed["registered"]["version"] == "1"
    # The backup lives outside the job's folder, and is removed once the model is exported.
    backups = tmp_path / "out" / "gs" / "demo-bucket" / "root" / "backup" / "imdb-text-encoder"
    assert backups.is_dir() and not any(backups.iterdir())
