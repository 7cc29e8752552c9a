"""One run of a pipeline per output at a time (pipeline/locks.py), with real processes: a second
run is refused naming the holder, and a holder killed with -9 leaves no stale lock."""

import os
import signal
import subprocess
import sys

import pytest

from pipeline import locks

HOLD = (
    "import sys, time; from pipeline import locks\n"
    "with locks.exclusive(sys.argv[1]):\n"
    "    print('held', flush=True); time.sleep(120)\n"
)


def test_a_second_holder_is_refused_naming_the_first_and_kill_9_frees_the_lock(tmp_path):
    path = str(tmp_path / "metadata" / "imdb-text-encoder" / "run.lock")
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD, path, "run", "--task", "imdb"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout.readline().strip() == "held"
        with pytest.raises(locks.Busy) as refused:
            with locks.exclusive(path):
                pass
        message = str(refused.value)
        assert f"{path} is held by process {first.pid} on " in message
        assert "run --task imdb" in message and "pass --wait" in message
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    with locks.exclusive(path):  # the kernel released the killed holder's lock
        assert f'"pid": {os.getpid()}' in open(path).read()
    assert open(path).read() == ""  # emptied on release


def test_waiting_takes_the_lock_once_the_holder_ends(tmp_path):
    path = str(tmp_path / "run.lock")
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD.replace("120", "2"), path], stdout=subprocess.PIPE, text=True
    )
    assert first.stdout.readline().strip() == "held"
    with locks.exclusive(path, wait=True):  # held when asked: without wait, Busy (above)
        assert f'"pid": {os.getpid()}' in open(path).read()
    assert first.wait(timeout=30) == 0  # the holder ran its block to the end
