"""One run of a pipeline at a time per output directory: `tfx-transformers run` holds an
exclusive lock (flock) on `<output>/metadata/<pipeline>/run.lock` for as long as it runs. The
operating system releases it when the process ends, however it ends (kill -9 included), so a
lock is never left stale. A second run of the same pipeline on the same output refuses at once,
naming the holder, or waits for it (`--wait`). Other pipelines on the same output run alongside:
each has its own ML Metadata store and pipeline root, and the registry is transactional."""

import contextlib
import fcntl
import json
import os
import socket
import sys
import time


class Busy(RuntimeError):
    """Another process holds the lock."""


def lock_path(metadata_path: str) -> str:
    return os.path.join(os.path.dirname(metadata_path), "run.lock")


def holder(path: str) -> str:
    """Who holds the lock at `path`, as the holder wrote it."""
    try:
        with open(path) as f:
            who = json.loads(f.read() or "{}")
    except (OSError, ValueError):
        who = {}
    if not who:
        return "another process"
    return (
        f"process {who.get('pid')} on {who.get('host')}, running since "
        f"{who.get('started')}: {who.get('command')}"
    )


@contextlib.contextmanager
def exclusive(path: str, wait: bool = False):
    """Holds the lock at `path` for the block; raises Busy (naming the holder) when another
    process holds it, unless `wait`."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise Busy(
                f"another run of this pipeline is using the same output: {path} is held "
                f"by {holder(path)}. Wait for it to finish, or pass --wait"
            ) from None
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "command": " ".join(sys.argv),
        }
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, json.dumps(me).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(descriptor, 0)
    finally:
        os.close(descriptor)  # releases the lock
