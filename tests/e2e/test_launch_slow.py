"""The other compiled jobs, launched here (`tfx-transformers launch`), each in its own process,
registering in a real MLflow tracking server on this machine's network address:

- the IMDB job compiled for a Kubeflow Pipelines 2 cluster outside Google Cloud (`--target
  kubeflow`, VERTEX_TRAINING=0, BEAM_RUNNER=direct), inside the image, every task given its
  inputs as the newest KFP release gives them (MLMD ids for names, no types, an executor-logs
  output, the executor output on the pod's disk, inputs downloaded into the pod first), its
  gs:// paths on the Cloud Storage emulator: its Trainer killed with -9 mid-training, the job
  launched again (every data step runs again, into new folders, as on that backend) resumes
  from the backup; a third launch registers version 2 with the first as its baseline (the
  same job in each older release's shape: tests/e2e/test_launch_kfp_releases.py);
- translation and CIFAR-10, once each inside the image, on their embedded data.

A Trainer killed and resumed under LocalDagRunner: tests/e2e/test_faults.py; the Vertex AI
job's data steps from the cache on a second launch: tests/e2e/test_launch.py.
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
    BUCKET,
    compile_job,
    data_in_bucket,
    launch,
    registered_versions,
    tracking_server,
)
from tests.gcs_util import names, running_emulator
from tests.pipeline_image import pipeline_image
from tests.ports import host_address
from tests.tracking_server import TrackingServer
from trainer_module import faults

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

IMDB = TASKS["imdb"].default_data_dir


@pytest.fixture
def server(tmp_path):
    started = tracking_server(tmp_path / "server")
    yield started
    started.stop()


def killed_in_training(job, output, halt_file, *args, read_halt=None) -> dict:
    """`launch JOB` with its Trainer halted once it has written a backup, then killed with -9
    (a preempted machine); the launch's summary. `read_halt`: what the halt file holds ("" until
    written), where it is not a file here."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "launch", str(job), "--output", str(output)]
        + [str(a) for a in args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    read_halt = read_halt or (lambda: halt_file.read_text() if halt_file.exists() else "")
    while not read_halt():
        assert process.poll() is None, "the launch ended before its Trainer backed up"
        time.sleep(0.2)
    halted = json.loads(read_halt())
    assert halted["point"] == "trainer.backed_up"
    os.kill(halted["pid"], signal.SIGKILL)  # the Trainer's process, as a preempted machine
    killed = json.loads(process.communicate(timeout=300)[0].strip().splitlines()[-1])
    assert process.returncode == 1
    assert killed["status"] == "failed" and killed["tasks"]["Trainer"]["state"] == "failed"
    assert killed["tasks"]["Pusher"]["state"] == "skipped"
    return killed


def halting_at_backup(halt_file) -> dict:
    return {faults.HALT_AT: "trainer.backed_up", faults.HALT_FILE: str(halt_file)}


def text_of(gcs, bucket: str, name: str) -> str:
    blob = gcs.client().bucket(bucket).get_blob(name)
    return blob.download_as_text() if blob is not None else ""


def test_the_kubeflow_target_on_cloud_storage_resumes_a_killed_trainer_and_compares_with_v1(
    tmp_path,
):
    """The IMDB job compiled for a Kubeflow Pipelines 2 cluster, in the image, in the newest
    KFP release's input shape, its gs:// paths on the Cloud Storage emulator: every client
    speaks GCS's API (TensorFlow through the gateway, Beam's gcsio, MLflow's GCS artifact store
    on the tracking server), and Kubeflow's launcher downloads each task's inputs first. Its
    Trainer killed with -9 mid-training, the job launched again resumes; a third launch
    registers version 2 with the first as its baseline."""
    image = pipeline_image()
    output = tmp_path / "out"
    # The emulator over the folder the launches use, so that the tracking server reaches it too.
    with running_emulator(output / "launch" / "gcs", buckets=(BUCKET,), environ=False) as gcs:
        server = TrackingServer(
            f"sqlite:///{tmp_path}/mlflow.db",
            f"gs://{BUCKET}/mlflow",
            host=host_address(),
            environment=gcs.environment(),
            log=str(tmp_path / "mlflow-server.log"),
        ).start()
        try:
            on_cloud_storage(tmp_path, output, image, gcs, server)
        finally:
            server.stop()


def on_cloud_storage(tmp_path, output, image, gcs, server) -> None:
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
    gcs.upload_tree(str(IMDB), f"gs://{BUCKET}/data/imdb")  # as gcloud storage cp -r would
    common = ["--image", image, "--gcs-emulator", "--param", f"data_dir=gs://{BUCKET}/data/imdb"]
    halt = f"gs://{BUCKET}/halted.json"  # the bucket: what the test and every pod share
    env_args = [f"--env={k}={v}" for k, v in halting_at_backup(halt).items()]
    killed_in_training(
        job, output, halt, *common, *env_args, read_halt=lambda: text_of(gcs, BUCKET, "halted.json")
    )

    resumed = launch(job, output, *common)
    assert resumed["target"] == "kubeflow"
    assert "objects in a Cloud Storage emulator" in resumed["stderr"]
    assert "Kubeflow Pipelines 2.17.0 backend" in resumed["stderr"]
    # No driver, no cached ExampleGen: every step ran again, into new folders ...
    assert {t["state"] for t in resumed["tasks"].values()} == {"succeeded"}
    # ... and the Trainer found the backup by what it reads, not where it lies.
    assert resumed["training"]["resumed_from_step"] >= 10  # at least one interval of 40 steps
    assert resumed["training"]["train_steps"] == 40
    assert resumed["baseline_model"] is None
    assert resumed["registered"]["version"] == "1"
    serving = f"gs://{BUCKET}/root/serving_model/imdb-text-encoder/"
    assert resumed["pushed_model"].startswith(serving)
    backups = names(gcs, BUCKET, "root/backup/imdb-text-encoder/")
    assert [n for n in backups if not n.endswith("/")] == []  # removed once exported
    logs = resumed["logs"]
    assert "pipeline.kubeflow_entrypoint" in open(os.path.join(logs, "StatisticsGen.log")).read()
    # Each step removed the folder markers Kubeflow's launcher cannot download ...
    assert "folder markers from the outputs" in open(os.path.join(logs, "Transform.log")).read()
    # ... and the launcher wrote each task's log to its executor-logs output.
    assert [n for n in names(gcs, BUCKET, "root/pipelines/") if n.endswith("/executor-logs")]
    # The registry's model, in the tracking server's GCS artifact store.
    assert names(gcs, BUCKET, "mlflow/")

    again = launch(job, output, *common, "--param", 'train_args={"num_steps": 12}')
    assert again["training"]["resumed_from_step"] == 0  # other training: a fresh start
    assert again["baseline_model"]["version"] == "1"
    assert again["registered"]["version"] == "2"
    assert registered_versions(server.url, "imdb-text-encoder") == [
        ("1", []),
        ("2", ["champion"]),
    ]
    prefix = serving[len(f"gs://{BUCKET}/") :]
    pushed = names(gcs, BUCKET, prefix)
    versions = {n[len(prefix) :].split("/")[0] for n in pushed}
    versions = {v for v in versions if v.isdigit()}
    assert len(versions) == 2  # two versions, each complete
    assert all(f"{prefix}{v}/saved_model.pb" in pushed for v in versions)


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
