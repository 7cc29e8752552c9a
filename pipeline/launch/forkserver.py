"""Task processes that start warm: a server that imports TFX, TensorFlow and Beam once, then
forks one child per task command line (`python -m MODULE ARGS...`), as Python's
multiprocessing forkserver does. Each task still runs in a process of its own, from its own
command line, with its own output; what it skips is the seven or so seconds every new
interpreter spends importing the stack (a launch runs a dozen tasks).

The server imports, and runs nothing: no TensorFlow op, no thread, no gRPC channel, so a fork
of it is as clean as a new interpreter that imported the same modules. `launch
--fresh-processes` starts every task from a new interpreter instead, as a container does.

Protocol (JSON lines): the launcher writes {"argv", "env", "log"}; the server forks, replies
{"pid"}, waits for the child, replies {"exit"} (a negative signal number when killed). When
the launcher goes away (the server's stdin closes), the running child is killed with it.
"""

import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
import threading
from typing import IO, Dict, Optional

# What the container entrypoints pull in (not the entrypoint modules themselves: a module
# that is run with `-m` must not be imported before, as the interpreter's runpy warns).
PRELOAD = (
    "tensorflow",
    "apache_beam",
    "kfp.pipeline_spec.pipeline_spec_pb2",
    "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_entrypoint_utils",
    "tfx.components.evaluator.executor",
    "tfx.components.example_gen.driver",
    "tfx.components.example_gen.input_processor",
    "tfx.orchestration.portable.outputs_utils",
    "tensorflow_transform",
    "tensorflow_data_validation",
    "keras",
)


def serve(stdin, stdout) -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    stdout.write(json.dumps({"ready": os.getpid()}) + "\n")
    stdout.flush()
    current: Dict[str, Optional[int]] = {"pid": None}

    def watch_launcher():
        stdin_closed.wait()
        if current["pid"]:
            try:
                os.killpg(current["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
        os._exit(0)

    stdin_closed = threading.Event()
    requests = []
    arrived = threading.Condition()

    def read():
        for line in stdin:
            with arrived:
                requests.append(json.loads(line))
                arrived.notify()
        stdin_closed.set()
        with arrived:
            arrived.notify()

    # Threads only after the preloads, and only in the server: a child starts from the fork
    # with its own single thread.
    threading.Thread(target=read, daemon=True).start()
    threading.Thread(target=watch_launcher, daemon=True).start()
    while True:
        with arrived:
            while not requests and not stdin_closed.is_set():
                arrived.wait()
            if not requests:
                return
            request = requests.pop(0)
        pid = os.fork()
        if pid == 0:
            run_child(request)  # never returns
        current["pid"] = pid
        stdout.write(json.dumps({"pid": pid}) + "\n")
        stdout.flush()
        _, status = os.waitpid(pid, 0)
        current["pid"] = None
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        stdout.write(json.dumps({"exit": code}) + "\n")
        stdout.flush()


def run_child(request: dict) -> None:
    """In the forked child: a session of its own, the request's environment and log, then
    `python -m MODULE ARGS...` as the interpreter would run it; it ends as the interpreter
    would, by SystemExit (atexit handlers run), which unwinds out of `serve`."""
    code = 1
    try:
        os.setsid()
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        os.environ.clear()
        os.environ.update(request["env"])
        argv = request["argv"]
        if argv[1:2] != ["-m"]:
            raise ValueError(f"the fork server runs `python -m MODULE`, not {argv[:3]}")
        sys.argv = [argv[2], *argv[3:]]
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    raise SystemExit(code)


if __name__ == "__main__":
    serve(sys.stdin, sys.stdout)


class WarmProcesses:
    """The launcher's side: starts the server (it warms up while the launch begins), runs
    `python -m` command lines through it, anything else as a new process; with `fresh`,
    everything as a new process."""

    def __init__(self, environment: dict, log: str, fresh: bool = False):
        self.environment = environment
        self.server: Optional[subprocess.Popen] = None
        if not fresh:
            with open(log, "ab") as server_log:
                self.server = subprocess.Popen(
                    [sys.executable, "-m", "pipeline.launch.forkserver"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=server_log,
                    text=True,
                    env=environment,
                )
            self.ready = False

    def run(self, argv: list, log: str, env: Optional[dict] = None) -> int:
        """Runs `argv` to its end with its output appended to `log` (`env` on top of the
        environment); its exit status (a negative signal number when killed)."""
        environment = {**self.environment, **(env or {})}
        if self.server is None or argv[1:2] != ["-m"] or not self._ready():
            with open(log, "ab") as out:
                process = subprocess.Popen(
                    argv,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=environment,
                    start_new_session=True,
                )
                return process.wait()
        request = {"argv": argv, "env": environment, "log": log}
        stdin = self._pipes()[0]
        stdin.write(json.dumps(request) + "\n")
        stdin.flush()
        self._reply("pid")
        return self._reply("exit")

    def _ready(self) -> bool:
        if not self.ready:
            self.ready = self._process().poll() is None and "ready" in self._read()
        return self.ready

    def _process(self) -> subprocess.Popen:
        if self.server is None:
            raise RuntimeError("the launch runs without a fork server")
        return self.server

    def _pipes(self) -> tuple:
        """The server's (stdin, stdout), text pipes."""
        process = self._process()
        stdin: Optional[IO[str]] = process.stdin
        stdout: Optional[IO[str]] = process.stdout
        if stdin is None or stdout is None:
            raise RuntimeError("the launch's fork server has no pipes")
        return stdin, stdout

    def _read(self) -> dict:
        line = self._pipes()[1].readline()
        return json.loads(line) if line else {}

    def _reply(self, key: str):
        reply = self._read()
        if key not in reply:
            raise RuntimeError("the launch's fork server stopped (its log: launch/logs/)")
        return reply[key]

    def close(self) -> None:
        if self.server is not None:
            self._pipes()[0].close()
            self.server.wait(timeout=30)
