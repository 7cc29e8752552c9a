"""Running one container task's command line to its end: the line as it runs here (the
ExecutorInput for `{{$}}`, the local Beam runner for Dataflow, Vertex AI training jobs sent to
the launch's job service), in a process here or in the image (runners.py), its log followed for
progress, its ExecutorOutput read back."""

import json
import os
import re
import threading
import time
from typing import Callable, List, Union

from pipeline import configs
from pipeline.launch.job_service import JobService
from pipeline.launch.runners import ImageRunner, LocalRunner

DATAFLOW = "--runner=DataflowRunner"
# The local runner's options for steps compiled for Dataflow (as `run`'s default, in memory).
LOCAL_BEAM = [
    f"--runner={configs.LOCAL_BEAM_RUNNER}",
    "--direct_running_mode=in_memory",
    "--direct_num_workers=1",
]
CLOUD_TRAINING = "tfx.extensions.google_cloud_ai_platform."
EXECUTOR_INPUT = "{{$}}"
PROGRESS_LINE = re.compile(r"progress\.py:\d+\] (.*)$")
LOG_TAIL_LINES = 25


def failure_reason(tail: List[str], code: int) -> str:
    """The last Python exception line of a failed task's log tail (`FileNotFoundError: ...`;
    buildah's own closing `Error: exit status 1` is not one), else its exit status."""
    exception = re.compile(r"^[\w.]+(Error|Exception)\b")
    return next(
        (line.strip() for line in reversed(tail) if exception.match(line)), f"exit status {code}"
    )


def command_line(
    command: List[str],
    args: List[str],
    executor_input: dict,
    service_url: str = "http://127.0.0.1:0",
    in_image: bool = False,
) -> List[str]:
    """The task's command line as it runs here: the ExecutorInput for `{{$}}`, the local
    runner for Dataflow, and a Vertex AI training job's client that sends its job to the
    launch's job service at `service_url` (training_jobs.py, job_service.py)."""
    serialized = json.dumps(executor_input, sort_keys=True)
    line = [serialized if part == EXECUTOR_INPUT else part for part in [*command, *args]]
    if DATAFLOW in line:
        at = line.index(DATAFLOW)
        line[at : at + 1] = LOCAL_BEAM
    if any(part.startswith(CLOUD_TRAINING) for part in line) and line[1:2] == ["-m"]:
        line[1:1] = ["-m", "pipeline.launch.training_jobs", "--service", service_url]
    return line if in_image else LocalRunner.local(line)


def read_output(output_file: str) -> dict:
    """The ExecutorOutput a task wrote ({} where it wrote none)."""
    if not os.path.exists(output_file):
        return {}
    with open(output_file) as f:
        return json.load(f)


class TaskProcesses:
    """Runs tasks' command lines through `runner`, Vertex AI training jobs through `jobs`;
    `write` shows a progress line."""

    def __init__(
        self,
        runner: Union[ImageRunner, LocalRunner],
        jobs: JobService,
        write: Callable[[str], None],
        in_image: bool,
    ):
        self.runner = runner
        self.jobs = jobs
        self.write = write
        self.in_image = in_image

    # Its arguments are what one task's container gets (pipeline/launch/launcher.py: _Task).
    def execute(
        self, command, args, executor_input, log_file: str, prefix: str, mounts=None, env=None
    ):
        """Runs one command line to its end (`env`: variables this task's pod gets beyond
        every task's), its output appended to `log_file`; the Trainer's progress lines are
        shown under the task's line; a failure raises with the log's end."""
        line = command_line(command, args, executor_input, self.jobs.url, self.in_image)
        with open(log_file, "ab") as log:
            log.write(f"$ {' '.join(line[:4])} ...\n".encode())
        stop = threading.Event()
        follower = threading.Thread(target=self.follow, args=(log_file, stop, prefix))
        follower.start()
        self.jobs.log_file = log_file
        try:
            code = self.runner.run(line, log_file, mounts=mounts, env=env)
        finally:
            stop.set()
            follower.join()
        if code != 0:
            with open(log_file, errors="replace") as f:
                reason = failure_reason(f.readlines()[-LOG_TAIL_LINES:], code)
            raise RuntimeError(f"{reason} (its log: {log_file})")

    def follow(self, log_file: str, stop: threading.Event, prefix: str) -> None:
        """Shows the progress lines the task logs, and its elapsed time when it says nothing
        for PROGRESS_TICK_SECONDS."""
        from trainer_module.training.progress import duration

        started = said = time.monotonic()
        # The last lines shown: the replicas of a training job log the same ones.
        shown: List[str] = []
        with open(log_file, errors="replace") as f:
            f.seek(0, os.SEEK_END)
            while not stop.wait(0.5):
                for text in f.readlines():
                    match = PROGRESS_LINE.search(text.rstrip())
                    if match and match.group(1) not in shown:
                        self.write(f"    {match.group(1)}")
                        shown = [match.group(1), *shown[:3]]
                        said = time.monotonic()
                if time.monotonic() - said >= configs.PROGRESS_TICK_SECONDS:
                    said = time.monotonic()
                    self.write(f"{prefix} ... {duration(said - started)}")

    def close(self) -> None:
        self.jobs.close()
        self.runner.close()
