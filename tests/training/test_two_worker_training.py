"""Real two-worker training on localhost: two processes, MultiWorkerMirroredStrategy on CPU."""
import json
import os
import socket
import subprocess
import sys

import tensorflow as tf
import tensorflow_transform as tft

from pipeline import configs
from tests.conftest import REVIEWS, review_spec
from trainer_module.preprocessing.local import analyze_and_transform
from trainer_module.text_encoder import FAMILY, preprocessing

TRAIN_STEPS = 3


def free_ports(count: int) -> list:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def write_transformed_examples(work_dir: str) -> None:
    """Transform's outputs for the tiny preset: the transform graph and gzipped tf.Examples."""
    rows, output = analyze_and_transform(
        REVIEWS, preprocessing.preprocessing_fn, FAMILY.transform_config(FAMILY.config("tiny")),
        os.path.join(work_dir, "transform"), review_spec())
    coder = tft.coders.ExampleProtoCoder(output.transformed_metadata.schema)
    for split in ("train", "eval"):
        path = os.path.join(work_dir, "examples", f"Split-{split}", "data.tfrecord.gz")
        os.makedirs(os.path.dirname(path))
        with tf.io.TFRecordWriter(path, options="GZIP") as writer:
            for row in rows:
                writer.write(coder.encode(row))


def test_two_workers_train_the_same_steps_and_only_the_chief_exports(tmp_path):
    work_dir = str(tmp_path)
    write_transformed_examples(work_dir)
    chief_port, worker_port = free_ports(2)
    cluster = {"chief": [f"localhost:{chief_port}"], "worker": [f"localhost:{worker_port}"]}
    processes = []
    for role in ("chief", "worker"):
        env = dict(os.environ, TF_CONFIG=json.dumps(
            {"cluster": cluster, "task": {"type": role, "index": 0}}),
            CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="1")
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "tests.training.two_worker_trainer", work_dir,
             str(TRAIN_STEPS)], cwd=configs.REPO_ROOT, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True))
    logs = [p.communicate(timeout=540)[0] for p in processes]
    for role, process, log in zip(("chief", "worker"), processes, logs):
        assert process.returncode == 0, f"{role} failed:\n{log[-5000:]}"
        assert "MultiWorkerMirroredStrategyForKeras with 2 replicas" in log, log[-3000:]
    chief_log, worker_log = logs
    assert f"Training finished as chief after {TRAIN_STEPS} optimizer steps" in chief_log
    assert f"Training finished as worker 0 after {TRAIN_STEPS} optimizer steps" in worker_log

    # The chief exported a servable model to the Trainer's output; the worker wrote elsewhere.
    serving_dir = os.path.join(work_dir, "model", "Format-Serving")
    served = tf.saved_model.load(serving_dir)
    answer = served.signatures["classify_text"](text=tf.constant(["a wonderful film"]))
    assert answer["probabilities"].shape == (1, 2)
    history = json.loads(open(os.path.join(work_dir, "model_run", "history.json")).read())
    assert history["config"]["batch_size"] == 2 * 8  # the tiny preset's 8 per replica
    assert "tfx-transformers-worker-" in worker_log and "tfx-transformers-worker-" not in chief_log
