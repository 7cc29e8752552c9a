"""Real two-worker training on localhost: two processes, MultiWorkerMirroredStrategy on CPU."""

import glob
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
import tensorflow as tf
import tensorflow_transform as tft

from pipeline import configs
from tests.ports import free_ports
from tests.training.two_worker_trainer import BACKUP_DIR, MODEL_DIR, MODEL_RUN_DIR, OVERRIDES_FILE
from trainer_module import faults

TRAIN_STEPS = 3


def write_transformed_examples(work_dir: str, run) -> None:
    """Transform's outputs as the Trainer component reads them, from the session's text encoder
    run (`run`): the transform graph, gzipped tf.Examples and the config overrides they were
    made for."""
    shutil.copytree(run.fn_args.transform_output, os.path.join(work_dir, "transform"))
    coder = tft.coders.ExampleProtoCoder(run.output.transformed_metadata.schema)
    for split in ("train", "eval"):
        path = os.path.join(work_dir, "examples", f"Split-{split}", "data.tfrecord.gz")
        os.makedirs(os.path.dirname(path))
        with tf.io.TFRecordWriter(path, options="GZIP") as writer:
            for row in run.transformed:
                writer.write(coder.encode(row))
    with open(os.path.join(work_dir, OVERRIDES_FILE), "w") as f:
        json.dump(run.fn_args.custom_config["overrides"], f)


def start_workers(work_dir: str, train_steps: int, evaluations: int = 1, chief_env=None) -> dict:
    """The chief and one worker of a two-worker training job, as processes: {role: Popen};
    `chief_env`: more environment for the chief."""
    chief_port, worker_port = free_ports(2)
    cluster = {"chief": [f"localhost:{chief_port}"], "worker": [f"localhost:{worker_port}"]}
    processes = {}
    for role in ("chief", "worker"):
        env = dict(
            os.environ,
            TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": role, "index": 0}}),
            CUDA_VISIBLE_DEVICES="",
            TF_CPP_MIN_LOG_LEVEL="1",
        )
        if role == "chief":
            env.update(chief_env or {})
        processes[role] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.training.two_worker_trainer",
                work_dir,
                str(train_steps),
                str(evaluations),
            ],
            cwd=configs.REPO_ROOT,
            env=env,
            stdout=open(os.path.join(work_dir, f"{role}.log"), "w"),  # read once it exits
            stderr=subprocess.STDOUT,
            text=True,
        )
        processes[role].log = os.path.join(work_dir, f"{role}.log")
    return processes


def finished_logs(processes: dict) -> dict:
    """Each process's output once both exit; if one fails first, the other (which would wait
    for its peer until the timeout) is stopped and the failure reported with its output."""
    deadline = time.monotonic() + 540
    while any(p.poll() is None for p in processes.values()):
        failed = [r for r, p in processes.items() if p.poll() not in (None, 0)]
        if failed or time.monotonic() > deadline:
            for p in processes.values():
                if p.poll() is None:
                    p.kill()
            break
        time.sleep(0.5)
    for p in processes.values():
        p.wait(timeout=60)
    logs = {role: open(p.log).read() for role, p in processes.items()}
    for role, process in processes.items():
        assert process.returncode == 0, f"{role} failed:\n{logs[role][-5000:]}"
        assert "MultiWorkerMirroredStrategyForKeras with 2 replicas" in logs[role]
    return logs


@pytest.mark.slow  # two Trainer processes; the launched two-replica job repeats it end to end
def test_two_workers_train_the_same_steps_and_only_the_chief_exports(tmp_path, text_encoder_run):
    work_dir = str(tmp_path)
    write_transformed_examples(work_dir, text_encoder_run)
    logs = finished_logs(start_workers(work_dir, TRAIN_STEPS))
    chief_log, worker_log = logs["chief"], logs["worker"]
    assert f"Training finished as chief after {TRAIN_STEPS} optimizer steps" in chief_log
    assert f"Training finished as worker 0 after {TRAIN_STEPS} optimizer steps" in worker_log

    # The chief exported a servable model to the Trainer's output; the worker wrote elsewhere.
    serving_dir = os.path.join(work_dir, MODEL_DIR, "Format-Serving")
    served = tf.saved_model.load(serving_dir)
    answer = served.signatures["classify_text"](text=tf.constant(["a wonderful film"]))
    assert answer["probabilities"].shape == (1, 2)
    history = json.loads(open(os.path.join(work_dir, MODEL_RUN_DIR, "history.json")).read())
    assert history["config"]["batch_size"] == 2 * 8  # the tiny preset's 8 per replica
    assert "tfx-transformers-worker-" in worker_log and "tfx-transformers-worker-" not in chief_log


@pytest.mark.slow
def test_a_killed_worker_and_its_rerun_resume_from_the_backup_on_both_workers(
    tmp_path, text_encoder_run
):
    """A worker killed with -9 after the first of four intervals: the job is restarted (both
    replicas, as Vertex AI restarts a training job), and both resume from the chief's backup.
    The chief halts right after writing its first complete backup (trainer_module/faults.py),
    so the kill lands mid-training, never after the job finished."""
    work_dir = str(tmp_path)
    write_transformed_examples(work_dir, text_encoder_run)
    steps, evaluations = 8, 4
    halt_file = os.path.join(work_dir, "halted.json")
    halting = {faults.HALT_AT: "trainer.backed_up", faults.HALT_FILE: halt_file}
    processes = start_workers(work_dir, steps, evaluations, chief_env=halting)
    backup = os.path.join(work_dir, BACKUP_DIR)
    deadline = time.time() + 480
    while not (os.path.exists(halt_file) and os.path.getsize(halt_file)):
        assert all(p.poll() is None for p in processes.values()), "a replica ended early"
        assert time.time() < deadline, "the chief never backed up"
        time.sleep(0.2)
    halted = json.loads(open(halt_file).read())
    assert halted == {"point": "trainer.backed_up", "pid": processes["chief"].pid}
    assert processes["worker"].poll() is None  # still training: it waits on the chief
    processes["worker"].kill()  # the chief waits on it in vain: the job is restarted whole
    processes["chief"].kill()
    for process in processes.values():
        process.communicate(timeout=60)
    (metadata,) = glob.glob(os.path.join(backup, "*", "interval-*", "training_metadata.json"))
    done = json.loads(open(metadata).read())["epoch"]
    assert 1 <= done < evaluations

    logs = finished_logs(start_workers(work_dir, steps, evaluations))
    for role in ("chief", "worker"):
        assert "Resumed from the backup" in logs[role], logs[role][-3000:]
        assert f"at step {done * steps // evaluations}" in logs[role]
    assert f"Training finished as chief after {steps} optimizer steps" in logs["chief"]
    assert f"Training finished as worker 0 after {steps} optimizer steps" in logs["worker"]
    history = json.loads(open(os.path.join(work_dir, MODEL_RUN_DIR, "history.json")).read())
    assert history["resumed_from_step"] == done * steps // evaluations
    assert not glob.glob(os.path.join(backup, "*", "*"))  # removed once exported
