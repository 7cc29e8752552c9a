"""Warm task processes: a `python -m` command line forked from the server runs as the
interpreter would run it, with its own environment, output and exit status."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from pipeline.launch.forkserver import WarmProcesses

# A warm process server forks a process per test: the slow tier (the launched jobs use it too).
pytestmark = pytest.mark.slow

MODULE = "tests.launch.echo_task"


@pytest.fixture(scope="module")
def processes(tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "server.log"
    warm = WarmProcesses({**os.environ, "FROM_THE_LAUNCH": "yes"}, str(log))
    yield warm
    warm.close()


def test_a_module_runs_as_main_with_its_arguments_environment_and_log(processes, tmp_path):
    log = tmp_path / "task.log"
    code = processes.run([sys.executable, "-m", MODULE, "hello", "0"], str(log))
    assert code == 0
    lines = log.read_text().splitlines()
    assert lines[0] == f"__main__ {MODULE} ['hello', '0'] yes"
    assert lines[1] == "on stderr"
    assert lines[2].startswith("pid ") and int(lines[2].split()[1]) != processes.server.pid
    assert lines[-1] == "atexit ran"  # the interpreter's shutdown, not a bare _exit


def test_its_exit_status_and_an_exception_come_back(processes, tmp_path):
    assert processes.run([sys.executable, "-m", MODULE, "x", "3"], str(tmp_path / "a")) == 3
    assert processes.run([sys.executable, "-m", MODULE, "x", "raise"], str(tmp_path / "b")) == 1
    assert "RuntimeError: asked to fail" in (tmp_path / "b").read_text()


def test_a_task_killed_with_minus_nine_reports_the_signal(processes, tmp_path):
    log = tmp_path / "killed.log"
    result = {}
    worker = threading.Thread(
        target=lambda: result.update(
            code=processes.run([sys.executable, "-m", MODULE, "x", "wait"], str(log))
        )
    )
    worker.start()
    pid = None
    while pid is None and worker.is_alive():
        text = log.read_text() if log.exists() else ""
        said = [line.split()[1] for line in text.splitlines() if line.startswith("pid ")]
        pid = int(said[0]) if said else time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    worker.join(timeout=60)
    assert result["code"] == -signal.SIGKILL


def test_other_command_lines_and_fresh_mode_start_a_new_interpreter(tmp_path):
    fresh = WarmProcesses(dict(os.environ, FROM_THE_LAUNCH="no"), str(tmp_path / "s"), fresh=True)
    assert fresh.server is None
    log = tmp_path / "fresh.log"
    assert fresh.run([sys.executable, "-m", MODULE, "fresh", "0"], str(log)) == 0
    assert log.read_text().splitlines()[0] == f"__main__ {MODULE} ['fresh', '0'] no"
    plain = [sys.executable, "-c", "print('plain')"]
    assert fresh.run(plain, str(tmp_path / "plain.log")) == 0
    assert (tmp_path / "plain.log").read_text() == "plain\n"
    fresh.close()
    assert subprocess.run(plain, capture_output=True).returncode == 0
