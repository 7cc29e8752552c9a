"""The Beam engines a team runs the pipeline's Beam steps on, started here for the tests and
the benchmark: a standalone Flink or Spark cluster on loopback with Beam's job server in front
(scripts/flink.sh, scripts/spark.sh; `make flink`, `make spark` fetch them: without them the
tests skip, unless REQUIRE_ENGINES=1, as in CI, which makes that a failure), and the SDK
workers' pool, a container of the pipeline image running its ENTRYPOINT, Beam's boot binary,
with `--worker_pool` (port 50000, as Beam's sidecar spec has it): each worker it starts goes
through boot again, which fetches the job's options and artifacts from the runner."""

import contextlib
import json
import os
import pathlib
import socket
import subprocess
import time
import urllib.request
import uuid
from typing import Iterator, Sequence, Tuple

import pytest

from pipeline import configs

BOOT = "/opt/apache/beam/boot"
POOL_PORT = 50000
JOB_ENDPOINT = "localhost:8099"  # both scripts' default job port
SCRIPTS = {
    "flink": configs.REPO_ROOT / "scripts" / "flink.sh",
    "spark": configs.REPO_ROOT / "scripts" / "spark.sh",
}
FLINK_REST = "http://localhost:8081"
SPARK_STATE = configs.REPO_ROOT / ".tools" / "spark" / "run"


def require(engine: str) -> None:
    """A skip (a failure with REQUIRE_ENGINES=1) where `make ENGINE` has not fetched it."""
    if subprocess.run([str(SCRIPTS[engine]), "installed"]).returncode == 0:
        return
    problem = f"{engine} is not fetched here: `make {engine}` (Java 17 and Maven)"
    if os.environ.get("REQUIRE_ENGINES") == "1":
        pytest.fail(problem)
    pytest.skip(problem)


@contextlib.contextmanager
def running(engine: str) -> Iterator[str]:
    """`scripts/ENGINE.sh start`, stopped after; the job server's endpoint."""
    require(engine)
    script = str(SCRIPTS[engine])
    started = subprocess.run([script, "start"], capture_output=True, text=True)
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        yield JOB_ENDPOINT
    finally:
        subprocess.run([script, "stop"], capture_output=True)


def finished_jobs(engine: str) -> int:
    """How many jobs the engine's cluster ran to the end since it started: Flink's JobManager
    over its REST API; Spark's worker by the applications' folders it keeps."""
    if engine == "flink":
        with urllib.request.urlopen(f"{FLINK_REST}/jobs/overview", timeout=30) as answer:
            jobs = json.load(answer)["jobs"]
        return sum(job["state"] == "FINISHED" for job in jobs)
    return sum(1 for entry in (SPARK_STATE / "work").glob("app-*"))


@contextlib.contextmanager
def worker_pool(
    image: str, shared: Sequence[str], log: pathlib.Path
) -> Iterator[Tuple[int, pathlib.Path]]:
    """`boot --worker_pool` in a container of `image` (buildah's chroot isolation: the host's
    network, so the job server here reaches it on loopback), the folders `shared` mounted at
    their paths, as a cluster's shared file system would be; (its port, its log)."""
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", POOL_PORT)) != 0, f"port {POOL_PORT} is taken"
    container = f"tfxt-pool-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["buildah", "from", "--pull-never", "--quiet", "--name", container, image],
        check=True,
        capture_output=True,
    )
    command = ["buildah", "run", "--isolation", "chroot", "--terminal=false"]
    for folder in shared:
        command += ["-v", f"{folder}:{folder}"]
    with open(log, "ab") as out:
        pool = subprocess.Popen(
            [*command, container, "--", BOOT, "--worker_pool"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert pool.poll() is None, log.read_text()[-2000:]
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", POOL_PORT)) == 0:
                    break
            assert time.monotonic() < deadline, "the worker pool did not start"
            time.sleep(0.3)
        yield POOL_PORT, log
    finally:
        os.killpg(pool.pid, 9)
        pool.wait(timeout=30)
        subprocess.run(["buildah", "rm", container], capture_output=True)
