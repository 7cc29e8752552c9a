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


HOLD_UNTIL_TOLD = (
    "import sys; from pipeline import locks\n"
    "with locks.exclusive(sys.argv[1]):\n"
    "    print('held', flush=True); sys.stdin.readline()\n"
)


def blocked_flock_waiters(path: str) -> int:
    """How many flock requests on `path`'s file the kernel holds blocked (/proc/locks lists
    each waiter as '-> FLOCK ... <device>:<inode> ...')."""
    inode = os.stat(path).st_ino
    with open("/proc/locks") as f:
        return sum(
            1
            for line in f
            if "->" in line and "FLOCK" in line and line.split()[-3].endswith(f":{inode}")
        )


def test_waiting_takes_the_lock_once_the_holder_ends(tmp_path):
    """The waiter is seen blocked in the kernel while the holder holds the lock, and gets it
    only once the holder, told to, lets go."""
    import threading
    import time

    path = str(tmp_path / "run.lock")
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD_UNTIL_TOLD, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert first.stdout.readline().strip() == "held"
    told, got = threading.Event(), {}

    def wait_for_the_lock():
        with locks.exclusive(path, wait=True):
            got["after_told"] = told.is_set()
            got["content"] = open(path).read()

    waiter = threading.Thread(target=wait_for_the_lock)
    waiter.start()
    while blocked_flock_waiters(path) == 0:  # the waiter is queued behind the holder
        assert waiter.is_alive() and first.poll() is None
        time.sleep(0.05)
    told.set()
    first.stdin.write("go\n")
    first.stdin.flush()
    waiter.join(timeout=60)
    assert got["after_told"] is True  # it could not have the lock before the holder let go
    assert f'"pid": {os.getpid()}' in got["content"]
    assert first.wait(timeout=30) == 0  # the holder ran its block to the end
