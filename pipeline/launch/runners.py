"""Where a launched task's command line runs: in this environment (`LocalRunner`), or inside the
pipeline image as a container would run it (`ImageRunner`).

`ImageRunner` gives every task (and every replica of a training job) a container of its own,
made from the image (`buildah from`) and removed after: the image's filesystem, environment
and working directory, a fresh `/tmp` and `HOME`, only the job's environment (the image's, the
job's `--env`, what the orchestrator sets) and no variable of the launcher's, and one folder of
this machine's mounted at its own path: the bucket's folder, which the job's gs:// URIs map to,
or, on the Cloud Storage emulator (`launch --gcs-emulator`), the emulator's client files (its
CA, the credentials), the bucket being reached through GCS's API. It runs the command with
buildah's chroot isolation (`buildah run --isolation chroot`): no container runtime runs a
container on this project's machines, and chroot isolation shares the host's network (a server
on this machine's addresses is reachable, as a cluster's service would be) and its process ids.
What a container would add and this does not: resource limits, a user namespace, Beam's boot
binary (the stand-in base image has none).
"""

import os
import shutil
import signal
import subprocess
import sys
import uuid
from typing import Callable, Dict, List, Mapping, Optional

from pipeline.launch.forkserver import WarmProcesses

PYTHON = ("python", "python3")


class Running:
    """A started command: `wait()` for its exit status, `stop()` to end it and its children
    (its own process group), then what it leaves cleaned up."""

    def __init__(self, process: subprocess.Popen, cleanup: Optional[Callable[[], None]] = None):
        self.process, self.cleanup = process, cleanup

    def wait(self) -> int:
        try:
            return self.process.wait()
        finally:
            if self.cleanup:
                self.cleanup()
                self.cleanup = None

    def stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.process.poll() is not None:
                return
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                continue


class LocalRunner:
    """Task commands in this environment: `python` is this interpreter; a task starts forked
    from a process that has imported the stack (forkserver.py) unless `fresh`. Its environment
    is the launcher's, with what the job sets on top."""

    in_image = False

    def __init__(self, environment: Mapping[str, str], log: str, fresh: bool = False):
        self.environment = dict(environment)
        self.processes = WarmProcesses(self.environment, log, fresh=fresh)

    def describe(self) -> str:
        return f"in this environment ({sys.executable})"

    def run(
        self,
        line: List[str],
        log_file: str,
        mounts: Optional[Mapping[str, str]] = None,
        env: Optional[Mapping[str, str]] = None,
    ) -> int:
        """Runs a task's `line` to its end, its output appended to `log_file` (`env` on top of
        the environment); its exit status."""
        return self.processes.run(self.local(line), log_file, dict(env or {}))

    def start(
        self, line: List[str], log_file: str, env: Optional[Mapping[str, str]] = None
    ) -> Running:
        """Starts `line` in a new process (a training job's replicas run side by side, while
        the fork server waits for the Trainer's task), `env` on top of the environment."""
        with open(log_file, "ab") as out:
            process = subprocess.Popen(
                self.local(line),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**self.environment, **(env or {})},
                start_new_session=True,
            )
        return Running(process)

    @staticmethod
    def local(line: List[str]) -> List[str]:
        return [
            sys.executable if i == 0 and part in PYTHON else part for i, part in enumerate(line)
        ]

    def close(self) -> None:
        self.processes.close()


class ImageRunner:
    """Task commands inside the pipeline image (the module's docstring)."""

    in_image = True

    def __init__(self, image: str, shared: str, scratch: str, environment: Mapping[str, str]):
        if not shutil.which("buildah"):
            raise RuntimeError(
                "launch --image runs each task in the image with buildah, which is not "
                "installed (Debian: apt-get install buildah)"
            )
        self.image, self.shared, self.scratch = image, shared, scratch
        # What the job sets in every container (`launch --env`), on top of the image's own.
        self.environment = dict(environment)
        inspect = subprocess.run(
            ["buildah", "inspect", "--type", "image", "--format", "{{.FromImageID}}", image],
            capture_output=True,
            text=True,
        )
        if inspect.returncode != 0:
            raise RuntimeError(
                f"no image {image} in buildah's store here: build it with `make image "
                f"IMAGE={image}` ({inspect.stderr.strip()[-200:]})"
            )
        self.image_id = inspect.stdout.strip()[:12]

    def describe(self) -> str:
        return f"inside the image {self.image} ({self.image_id}), a container per task"

    def run(
        self,
        line: List[str],
        log_file: str,
        mounts: Optional[Mapping[str, str]] = None,
        env: Optional[Mapping[str, str]] = None,
    ) -> int:
        """Runs a task's `line` in a new container of the image, to its end; its exit status."""
        return self.start(line, log_file, env=env, mounts=mounts).wait()

    def start(
        self,
        line: List[str],
        log_file: str,
        env: Optional[Mapping[str, str]] = None,
        mounts: Optional[Mapping[str, str]] = None,
    ) -> Running:
        """Starts `line` in a new container of the image, its output appended to `log_file`.
        `mounts` {host folder: path inside} come with the shared folder; `env` on top of the
        job's."""
        container = f"tfxt-{uuid.uuid4().hex[:12]}"
        made = subprocess.run(
            ["buildah", "from", "--pull-never", "--quiet", "--name", container, self.image],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            raise RuntimeError(f"buildah could not make a container of {self.image}: {made.stderr}")
        own = os.path.join(self.scratch, container)
        volumes: Dict[str, str] = {
            self.shared: self.shared,
            os.path.join(own, "tmp"): "/tmp",
            os.path.join(own, "home"): "/root",
            **(mounts or {}),
        }
        command = ["buildah", "run", "--isolation", "chroot", "--terminal=false"]
        for host, inside in volumes.items():
            os.makedirs(host, exist_ok=True)
            command += ["-v", f"{host}:{inside}"]
        for name, value in {**self.environment, "HOME": "/root", **(env or {})}.items():
            command += ["--env", f"{name}={value}"]

        def cleanup() -> None:
            subprocess.run(["buildah", "rm", container], capture_output=True)
            shutil.rmtree(own, ignore_errors=True)

        try:
            with open(log_file, "ab") as out:
                out.write(
                    f"# in {container}, a container of {self.image} ({self.image_id})\n".encode()
                )
                out.flush()
                process = subprocess.Popen(
                    [*command, container, "--", *line],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=buildah_environment(),
                    start_new_session=True,
                )
        except BaseException:
            cleanup()
            raise
        return Running(process, cleanup)

    def close(self) -> None:
        pass


def buildah_environment() -> Dict[str, str]:
    """What buildah itself needs of the launcher's environment (its store, its temp folder),
    none of which reaches the container."""
    keep = (
        "PATH",
        "HOME",
        "TMPDIR",
        "XDG_RUNTIME_DIR",
        "CONTAINERS_STORAGE_CONF",
        "BUILDAH_ISOLATION",
    )
    return {k: v for k, v in os.environ.items() if k in keep}
