"""Vertex AI custom training jobs, run on this machine: what a launched Trainer or Tuner task
starts when it was compiled with VERTEX_TRAINING=1.

TFX's Google Cloud executors (tfx.extensions.google_cloud_ai_platform) build the CustomJob
themselves, each worker pool's container command included (`python -m
tfx.scripts.run_executor ...`), and hand it to Vertex AI's JobServiceClient. A launched task
runs those executors unchanged through this module:

    python -m pipeline.launch.training_jobs -m <the task's module> <its arguments>

which puts LocalJobServiceClient in JobServiceClient's place, then runs the task's module as
`python -m` would. The job's worker pools become local processes, one per replica, each
running the command Vertex AI would run, with the CLUSTER_SPEC and TF_CONFIG that Vertex AI
sets on each replica (pool 0 the chief, pool 1 the workers, on localhost ports). Machine
types, accelerators and the job's service account are reported, not provided: the replicas
train on this machine's CPU.
"""

import json
import os
import runpy
import socket
import subprocess
import sys
import threading
import uuid
from typing import List

from absl import logging

# Vertex AI's TF_CONFIG roles of worker pools 0-3.
POOL_ROLES = ("chief", "worker", "ps", "evaluator")


def free_ports(count: int) -> List[int]:
    """`count` distinct ports free on localhost now (each socket is held until all are taken,
    so none is handed out twice)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def replica_environments(pools: List[dict], job: dict) -> List[tuple]:
    """(pool index, replica index, environment) of every replica of `pools`, with the
    CLUSTER_SPEC and TF_CONFIG Vertex AI sets."""
    counts = [int(pool.get("replica_count", 1)) for pool in pools]
    ports = iter(free_ports(sum(counts)))
    hosts = [[f"127.0.0.1:{next(ports)}" for _ in range(n)] for n in counts]
    cluster = {f"workerpool{i}": hosts[i] for i in range(len(pools)) if hosts[i]}
    tf_cluster = {POOL_ROLES[i]: hosts[i] for i in range(len(pools)) if hosts[i]}
    replicas = []
    for i, count in enumerate(counts):
        for index in range(count):
            cluster_spec = {
                "cluster": cluster,
                "environment": "cloud",
                "task": {"type": f"workerpool{i}", "index": index},
                "job": job,
            }
            tf_config = {
                "cluster": tf_cluster,
                "environment": "cloud",
                "task": {"type": POOL_ROLES[i], "index": index},
            }
            replicas.append(
                (
                    i,
                    index,
                    {"CLUSTER_SPEC": json.dumps(cluster_spec), "TF_CONFIG": json.dumps(tf_config)},
                )
            )
    return replicas


def describe_pool(index: int, pool: dict) -> str:
    machine = pool.get("machine_spec", {})
    accelerator = (
        f" with {machine.get('accelerator_count', 0)} {machine['accelerator_type']}"
        if machine.get("accelerator_type")
        else ""
    )
    return (
        f"worker pool {index}: {pool.get('replica_count', 1)} x "
        f"{machine.get('machine_type', 'default machine')}{accelerator}"
    )


def run_job(custom_job: dict) -> bool:
    """Runs every replica of the job's worker pools as a local process, and waits for them;
    True when all exit 0. When one fails the others are stopped (Vertex AI fails the job)."""
    spec = custom_job.get("job_spec", {})
    pools = spec.get("worker_pool_specs", [])
    if spec.get("service_account"):
        logging.info("Job service account %s: not used here", spec["service_account"])
    processes = []
    for pool_index, replica, environment in replica_environments(pools, custom_job):
        pool = pools[pool_index]
        logging.info(
            "Local training job %s, %s: replica %d runs here on the CPU",
            custom_job.get("display_name", ""),
            describe_pool(pool_index, pool),
            replica,
        )
        container = pool.get("container_spec", {})
        command = list(container.get("command", [])) + list(container.get("args", []))
        if command and command[0] in ("python", "python3"):
            command[0] = sys.executable
        processes.append(subprocess.Popen(command, env={**os.environ, **environment}))
    failed = threading.Event()

    def watch(process):
        if process.wait() != 0:
            failed.set()
            for other in processes:
                if other.poll() is None:
                    other.terminate()

    watchers = [threading.Thread(target=watch, args=(p,)) for p in processes]
    for watcher in watchers:
        watcher.start()
    for watcher in watchers:
        watcher.join()
    return not failed.is_set() and all(p.returncode == 0 for p in processes)


class LocalJobServiceClient:
    """Stands in for google.cloud.aiplatform.gapic.JobServiceClient: create_custom_job runs
    the job to its end (run_job), so the executor's first poll finds it finished."""

    jobs: dict = {}

    def __init__(self, client_options=None, **_):
        self.endpoint = (client_options or {}).get("api_endpoint", "")

    def create_custom_job(self, parent: str, custom_job: dict):
        from google.cloud.aiplatform_v1.types.custom_job import CustomJob
        from google.cloud.aiplatform_v1.types.job_state import JobState

        name = f"{parent}/customJobs/local-{uuid.uuid4().hex[:12]}"
        succeeded = run_job(custom_job)
        state = JobState.JOB_STATE_SUCCEEDED if succeeded else JobState.JOB_STATE_FAILED
        job = CustomJob(name=name, display_name=custom_job.get("display_name", ""), state=state)
        self.jobs[name] = job
        return job

    def get_custom_job(self, name: str, retry=None):
        return self.jobs[name]


def install() -> None:
    """Puts LocalJobServiceClient in Vertex AI's JobServiceClient's place, in this process."""
    from google.cloud.aiplatform import gapic

    gapic.JobServiceClient = LocalJobServiceClient  # type: ignore[misc, assignment]


def main(argv: List[str]) -> None:
    if len(argv) < 2 or argv[0] != "-m":
        raise SystemExit("usage: python -m pipeline.launch.training_jobs -m MODULE [ARGS...]")
    install()
    sys.argv = [argv[1], *argv[2:]]
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
