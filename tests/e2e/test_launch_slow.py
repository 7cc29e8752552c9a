"""The other compiled jobs, launched here (`tfx-transformers launch`), each in its own process,
registering in a real MLflow tracking server on loopback:

- the IMDB job compiled for a Kubeflow Pipelines 2 cluster outside Google Cloud (`--target
  kubeflow`, VERTEX_TRAINING=0, BEAM_RUNNER=direct), inside the image, every task given its
  inputs as that backend gives them (MLMD ids for names, no types, the executor output on the
  pod's disk): its Trainer killed with -9 mid-training, the job launched again (every data step
  runs again, into new folders, as on that backend) resumes from the backup; a third launch
  registers version 2 with the first as its baseline;
- translation and CIFAR-10, once each inside the image, on their embedded data;
- the Vertex AI job with its Trainer in its own step, killed with -9 and launched again (in
  this environment): its data steps come from the cache and it resumes.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pipeline.tasks import TASKS
from tests.e2e.launch_util import (
    compile_job,
    data_in_bucket,
    launch,
    registered_versions,
    tracking_server,
)
from tests.pipeline_image import pipeline_image
from trainer_module import faults

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

IMDB = TASKS["imdb"].default_data_dir


@pytest.fixture
def server(tmp_path):
    started = tracking_server(tmp_path / "server")
    yield started
    started.stop()


def killed_in_training(job, output, halt_file, *args) -> dict:
    """`launch JOB` with its Trainer halted once it has written a backup, then killed with -9
    (a preempted machine); the launch's summary."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "launch", str(job), "--output", str(output)]
        + [str(a) for a in args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
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
    return killed


def halting_at_backup(halt_file) -> dict:
    return {faults.HALT_AT: "trainer.backed_up", faults.HALT_FILE: str(halt_file)}


def test_the_kubeflow_target_in_the_image_resumes_a_killed_trainer_and_compares_with_v1(
    tmp_path, server
):
    image = pipeline_image()
    environ = {"VERTEX_TRAINING": "0", "BEAM_RUNNER": "direct"}
    job = compile_job(
        tmp_path,
        "imdb",
        server.url,
        environ,
        target="kubeflow",
        preset="tiny",
        train_steps=40,
        overrides={"evaluations": 4},
    )
    output = tmp_path / "out"
    data = data_in_bucket(output, IMDB, "imdb")
    common = ["--image", image, "--param", f"data_dir={data}"]
    # The halt file in the bucket: the one folder a task in the image shares with this one.
    halt_file = output / "gs" / "demo-bucket" / "halted.json"
    env_args = [f"--env={k}={v}" for k, v in halting_at_backup(halt_file).items()]
    killed_in_training(job, output, halt_file, *common, *env_args)

    resumed = launch(job, output, *common)
    assert resumed["target"] == "kubeflow"
    # No driver, no cached ExampleGen: every step ran again, into new folders ...
    assert {t["state"] for t in resumed["tasks"].values()} == {"succeeded"}
    # ... and the Trainer found the backup by what it reads, not where it lies.
    assert resumed["training"]["resumed_from_step"] >= 10  # at least one interval of 40 steps
    assert resumed["training"]["train_steps"] == 40
    assert resumed["baseline_model"] is None
    assert resumed["registered"]["version"] == "1"
    backups = output / "gs" / "demo-bucket" / "root" / "backup" / "imdb-text-encoder"
    assert backups.is_dir() and not any(backups.iterdir())  # removed once exported
    log = open(os.path.join(resumed["logs"], "StatisticsGen.log")).read()
    assert "pipeline.kubeflow_entrypoint" in log  # the entrypoint that fills the input types

    again = launch(job, output, *common, "--param", 'train_args={"num_steps": 12}')
    assert again["training"]["resumed_from_step"] == 0  # other training: a fresh start
    assert again["baseline_model"]["version"] == "1"
    assert again["registered"]["version"] == "2"
    assert registered_versions(server.url, "imdb-text-encoder") == [
        ("1", []),
        ("2", ["champion"]),
    ]


@pytest.mark.parametrize(
    "task, example_gen",
    [("translation", "ParallelCorpusExampleGen"), ("cifar10", "ImageExampleGen")],
)
def test_translation_and_cifar10_jobs_launch_in_the_image_on_their_embedded_data(
    tmp_path, server, task, example_gen
):
    image = pipeline_image()
    job = compile_job(
        tmp_path, task, server.url, preset="tiny", train_steps=8, blessing_threshold=0.0
    )
    output = tmp_path / "out"
    data = data_in_bucket(output, TASKS[task].default_data_dir, task)
    summary = launch(job, output, "--image", image, "--param", f"data_dir={data}")
    assert summary["tasks"][example_gen]["state"] == "succeeded"
    assert summary["blessed"] is True
    assert summary["registered"]["version"] == "1"
    assert os.path.exists(os.path.join(summary["pushed_model"], "saved_model.pb"))


def test_a_trainer_killed_mid_training_resumes_when_the_job_is_launched_again(tmp_path, server):
    job = compile_job(
        tmp_path,
        "imdb",
        server.url,
        {"VERTEX_TRAINING": "0"},
        preset="tiny",
        train_steps=40,
        overrides={"evaluations": 4},
    )
    halt_file = tmp_path / "halted.json"
    data = ["--param", f"data_dir={IMDB}"]
    killed_in_training(
        job,
        tmp_path / "out",
        halt_file,
        *data,
        *[f"--env={k}={v}" for k, v in halting_at_backup(halt_file).items()],
    )
    resumed = launch(job, tmp_path / "out", *data)
    assert resumed["tasks"]["Transform"]["state"] == "cached"
    assert resumed["tasks"]["Trainer"]["state"] == "succeeded"
    assert resumed["training"]["resumed_from_step"] >= 10  # at least one interval of 40 steps
    assert resumed["training"]["train_steps"] == 40
    assert resumed["registered"]["version"] == "1"
    # The backup lives outside the job's folder, and is removed once the model is exported.
    backups = tmp_path / "out" / "gs" / "demo-bucket" / "root" / "backup" / "imdb-text-encoder"
    assert backups.is_dir() and not any(backups.iterdir())


def test_a_job_reading_a_folder_of_this_machine_fails_in_the_image_as_on_the_cloud(tmp_path):
    """In the image a task sees only the image and the bucket: a data_dir on this machine's
    disk (which a launch in this environment would read) is not there, and the ExampleGen
    fails naming it, as it would in a cloud step."""
    image = pipeline_image()
    job = compile_job(
        tmp_path, "translation", "", {"MODEL_REGISTRY": "none"}, preset="tiny", train_steps=8
    )
    data = TASKS["translation"].default_data_dir
    failed = launch(
        job, tmp_path / "out", "--image", image, "--param", f"data_dir={data}", check=False
    )
    assert failed["exit_code"] == 1
    assert "is not in the bucket: a task in the image sees only the image" in failed["stderr"]
    assert failed["tasks"]["ParallelCorpusExampleGen"]["state"] == "failed"
    assert str(data) in failed["error"]
