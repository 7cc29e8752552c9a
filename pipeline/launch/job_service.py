"""Vertex AI's job service, for a launch: the CustomJobs a launched Trainer or Tuner starts
(training_jobs.py is the client in the task), run on this machine.

An HTTP server on loopback, in the launcher's process. `POST /customJobs` takes the job as
the client sent it (a CustomJob proto as JSON), applies the checks Vertex AI's service makes
before it provisions anything (below), then runs every replica of its worker pools, each
with the CLUSTER_SPEC and TF_CONFIG Vertex AI sets (pool 0 the chief, pool 1 the workers, on
localhost ports), through the launch's runner: a container of the image per replica with
`launch --image`, a process here without. It answers when the job has ended, with its state;
`GET /customJobs/NAME` answers the same. Machine types, accelerators and the job's service
account are reported, not provided: the replicas train on this machine's CPU.

The service's checks (Vertex AI's CustomJobSpec rules): at least one worker pool; the first
pool (the chief) has exactly one replica; every pool with replicas names a machine type and a
container image; an accelerator count needs an accelerator type and the other way round.
"""

import http.server
import json
import socket
import threading
import uuid
from typing import Dict, List, Optional

# Vertex AI's TF_CONFIG roles of worker pools 0-3.
POOL_ROLES = ("chief", "worker", "ps", "evaluator")


class JobError(ValueError):
    """What Vertex AI's service refuses (INVALID_ARGUMENT)."""


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


def check_job(job: dict) -> List[dict]:
    """The job's worker pools, after the service's checks (the module's docstring)."""
    pools = job.get("jobSpec", {}).get("workerPoolSpecs", [])
    if not pools:
        raise JobError("CustomJob.job_spec.worker_pool_specs is empty")
    if int(pools[0].get("replicaCount", 0)) != 1:
        raise JobError(
            "CustomJob.job_spec.worker_pool_specs[0].replica_count must be 1 (the chief), "
            f"not {pools[0].get('replicaCount', 0)}"
        )
    for index, pool in enumerate(pools):
        if not int(pool.get("replicaCount", 0)):
            continue
        machine = pool.get("machineSpec", {})
        where = f"CustomJob.job_spec.worker_pool_specs[{index}]"
        if not machine.get("machineType"):
            raise JobError(f"{where}.machine_spec.machine_type is required")
        if not pool.get("containerSpec", {}).get("imageUri"):
            raise JobError(f"{where}.container_spec.image_uri is required")
        kind = machine.get("acceleratorType", "ACCELERATOR_TYPE_UNSPECIFIED")
        count = int(machine.get("acceleratorCount", 0))
        if (kind != "ACCELERATOR_TYPE_UNSPECIFIED") != (count > 0):
            raise JobError(
                f"{where}.machine_spec: accelerator_type {kind} with accelerator_count {count}"
            )
    return pools


def replica_environments(pools: List[dict], job: dict) -> List[tuple]:
    """(pool index, replica index, environment) of every replica of `pools` (CustomJob JSON),
    with the CLUSTER_SPEC and TF_CONFIG Vertex AI sets."""
    counts = [int(pool.get("replicaCount", 0)) for pool in pools]
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
            environment = {
                "CLUSTER_SPEC": json.dumps(cluster_spec),
                "TF_CONFIG": json.dumps(tf_config),
            }
            for variable in pools[i].get("containerSpec", {}).get("env", []):
                environment[variable["name"]] = variable.get("value", "")
            replicas.append((i, index, environment))
    return replicas


def describe_pool(index: int, pool: dict) -> str:
    machine = pool.get("machineSpec", {})
    kind = machine.get("acceleratorType", "ACCELERATOR_TYPE_UNSPECIFIED")
    accelerator = (
        f" with {machine.get('acceleratorCount', 0)} {kind}"
        if kind != "ACCELERATOR_TYPE_UNSPECIFIED"
        else ""
    )
    return (
        f"worker pool {index}: {pool.get('replicaCount', 1)} x "
        f"{machine.get('machineType', 'default machine')}{accelerator}"
    )


class JobService:
    """The service (the module's docstring); `runner` runs each replica's command line, its
    output appended to the log of the task that started the job (`log_file`)."""

    def __init__(self, runner):
        self.runner = runner
        self.log_file: Optional[str] = None
        self.jobs: Dict[str, dict] = {}
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                try:
                    answer = service.create(request["parent"], request["custom_job"])
                except (JobError, KeyError) as error:
                    return self.reply(400, {"error": str(error)})
                self.reply(200, answer)

            def do_GET(self):
                name = self.path.split("/customJobs/", 1)[-1]
                if name not in service.jobs:
                    return self.reply(404, {"error": f"no job {name}"})
                self.reply(200, service.jobs[name])

            def reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # quiet: the task's log says what ran
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def say(self, line: str) -> None:
        if self.log_file:
            with open(self.log_file, "a") as log:
                log.write(line + "\n")

    def create(self, parent: str, job: dict) -> dict:
        pools = check_job(job)
        name = f"{parent}/customJobs/local-{uuid.uuid4().hex[:12]}"
        spec = job.get("jobSpec", {})
        if spec.get("serviceAccount"):
            self.say(f"Job service account {spec['serviceAccount']}: not used here")
        succeeded = self.run(job, pools)
        state = "JOB_STATE_SUCCEEDED" if succeeded else "JOB_STATE_FAILED"
        self.jobs[name] = {"name": name, "displayName": job.get("displayName", ""), "state": state}
        return self.jobs[name]

    def run(self, job: dict, pools: List[dict]) -> bool:
        """Every replica at once, each to its end; True when all exit 0. When one fails the
        others are stopped (Vertex AI fails the job)."""
        log_file = self.log_file or "/dev/null"
        started = []
        for pool_index, replica, environment in replica_environments(pools, job):
            pool = pools[pool_index]
            self.say(
                f"Local training job {job.get('displayName', '')}, "
                f"{describe_pool(pool_index, pool)}: replica {replica} runs "
                f"{self.runner.describe()} on the CPU"
            )
            container = pool.get("containerSpec", {})
            line = list(container.get("command", [])) + list(container.get("args", []))
            started.append(self.runner.start(line, log_file, env=environment))
        failed = threading.Event()

        def watch(running) -> None:
            if running.wait() != 0:
                failed.set()
                for other in started:
                    other.stop()

        watchers = [threading.Thread(target=watch, args=(r,)) for r in started]
        for watcher in watchers:
            watcher.start()
        for watcher in watchers:
            watcher.join()
        return not failed.is_set()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
