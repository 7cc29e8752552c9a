"""Faults, with real processes, on a copy of this module's run (the session run's command, run
again so that these long tests go to their own xdist worker): a run killed with -9
during Transform, then one killed while training, then one killed while registering; run
again, it reuses the Transform that completed, has resumed from the last backup, and has pushed
and registered one version; a second run started meanwhile on the same output is refused,
naming the first. The kills land at named points (trainer_module/faults.py) or on a file the
run writes, never after a sleep."""

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.e2e.cli_util import copy_output
from tests.e2e.conftest import tiny_imdb_run
from trainer_module import faults

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

STEPS = 1000  # long enough to be killed part-way: about ten seconds of training here


def cli(output, args, halt_at=None, halt_file=None, killed=False):
    """`run` in its own process group; with `halt_at`, it stops at that named point
    (trainer_module/faults.py) and writes `halt_file`, to be killed there. A run to be killed
    prints to nowhere (a pipe nobody reads would fill and stop it)."""
    halting = {faults.HALT_AT: halt_at, faults.HALT_FILE: str(halt_file)} if halt_at else {}
    into = subprocess.DEVNULL if halt_at or killed else subprocess.PIPE
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "run", "--output", output, *map(str, args)],
        stdout=into,
        stderr=into,
        text=True,
        start_new_session=True,
        env={**os.environ, **halting},
    )


def kill_at(process, point: str, halt_file) -> None:
    """Waits until `process` halts at `point`, checks that it is there, and kills it -9."""
    try:
        wait_for(lambda: os.path.exists(halt_file) and os.path.getsize(halt_file), process)
        assert json.loads(open(halt_file).read()) == {"point": point, "pid": process.pid}
    finally:
        kill_group(process)
    os.remove(halt_file)


def kill_group(process) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)


def transform_executions(output) -> dict:
    """{execution id: state} of the Transform executions in the pipeline's ML Metadata."""
    import ml_metadata as mlmd
    from tfx.orchestration import metadata

    store = mlmd.MetadataStore(
        metadata.sqlite_metadata_connection_config(
            os.path.join(output, "metadata", "imdb-text-encoder", "metadata.sqlite")
        )
    )
    types = {t.id: t.name for t in store.get_execution_types()}
    return {
        e.id: e.last_known_state
        for e in store.get_executions()
        if types[e.type_id].endswith("Transform")
    }


def registered_versions(output) -> list:
    from components.model_registry.backends import from_config, mlflow_config

    return from_config(mlflow_config(os.path.join(output, "mlflow"), tracking_uri=None)).versions()


def wait_for(predicate, process, seconds=240):
    deadline = time.time() + seconds
    while not predicate():
        assert process.poll() is None, f"the run exited with {process.returncode}"
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_imdb_run(tmp_path_factory.mktemp("faults"))


def test_runs_killed_in_transform_training_and_registry_recover_and_a_concurrent_run_is_refused(
    run, tmp_path
):
    output = copy_output(run.output, tmp_path / "out")
    args = list(run.args)
    args[args.index("--train-steps") + 1] = str(STEPS)
    args += ["--set", "evaluations=10", "--set", "vocab_size=120"]  # a new Transform too
    lock = os.path.join(output, "metadata", "imdb-text-encoder", "run.lock")
    backups = os.path.join(output, "pipelines", "imdb-text-encoder", "Trainer", "backup")
    before = transform_executions(output)

    halt_file = tmp_path / "halted.json"
    # kill -9 while Transform traces the preprocessing_fn (a named point, not a sleep)
    kill_at(cli(output, args, "transform", halt_file), "transform", halt_file)
    (killed_transform,) = set(transform_executions(output)) - set(before)

    in_trainer = cli(output, args, killed=True)
    try:  # kill -9 as soon as the first backup is written
        wait_for(
            lambda: glob.glob(os.path.join(backups, "*", "interval-*", "training_metadata.json")),
            in_trainer,
        )
    finally:
        kill_group(in_trainer)
    (backup,) = glob.glob(os.path.join(backups, "*"))

    rerun = cli(output, args, "registry.uploading", halt_file)  # the same run, again
    # (the killed run's line stays in the lock file: the kernel released its lock, no more)
    wait_for(lambda: f'"pid": {rerun.pid},' in open(lock).read(), rerun)
    second = cli(output, args)  # and the same pipeline on the same output, meanwhile
    out, err = second.communicate(timeout=240)
    assert second.returncode == 2, err[-3000:]
    assert f"is held by process {rerun.pid} on " in err
    assert json.loads(out.strip().splitlines()[-1])["status"] == "refused"

    # then kill -9 the rerun in the registration: its run created, the model not yet uploaded
    kill_at(rerun, "registry.uploading", halt_file)

    last = cli(output, args)  # and once more: it registers the pushed version once
    out, err = last.communicate(timeout=600)
    assert last.returncode == 0, err[-3000:]
    summary = json.loads(out.strip().splitlines()[-1])
    training = summary["training"]
    assert training["train_steps"] == STEPS
    assert 0 < training["resumed_from_step"] < STEPS
    assert training["resumed_from_step"] % (STEPS // 10) == 0  # at an interval's end
    assert not os.path.exists(backup)  # removed once the model was exported
    serving = os.path.join(output, "serving_model", "imdb-text-encoder")
    assert len(os.listdir(serving)) == 2  # the session run's version and this one, complete
    assert all(
        os.path.exists(os.path.join(serving, v, "saved_model.pb")) for v in os.listdir(serving)
    )
    assert summary["registered"]["version"] == "2"
    versions = registered_versions(output)
    assert [v["version"] for v in versions] == ["1", "2"]  # nothing half registered
    assert versions[1]["saved_model"] == summary["pushed_model"]
    states = transform_executions(output)
    COMPLETE = 3  # ml_metadata's Execution.COMPLETE
    assert states[killed_transform] != COMPLETE  # never published: nothing read its output
    completed = [e for e, state in states.items() if e not in before and state == COMPLETE]
    assert len(completed) == 1  # the killed Transform ran again once; the last run reused it
    assert summary["components"]["Transform"]["state"] == "cached"


def test_an_output_that_cannot_be_written_is_refused_naming_it_and_then_runs_when_it_can(
    run, tmp_path
):
    """A full disk, simulated with the process's file-size limit (RLIMIT_FSIZE: the suite may
    run as root in a container, where neither chmod nor a small tmpfs stop a write)."""
    import hashlib
    import resource

    from tests.e2e.cli_util import run_cli

    output = copy_output(run.output, tmp_path / "out")
    store = os.path.join(output, "metadata", "imdb-text-encoder", "metadata.sqlite")
    before = hashlib.sha256(open(store, "rb").read()).hexdigest()

    def full_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails: EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    refused = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "run", "--output", output, *map(str, run.args)],
        capture_output=True,
        text=True,
        preexec_fn=full_disk,
        timeout=300,
    )
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert f"error: cannot write to {output}: File too large (could not write 1,024 KiB)" in (
        refused.stderr
    )
    assert hashlib.sha256(open(store, "rb").read()).hexdigest() == before  # nothing recorded

    (summary,) = run_cli("run", "--output", output, *run.args).lines  # a healthy disk
    assert summary["status"] == "succeeded"


def test_a_read_only_output_is_refused_naming_it(tmp_path):
    """A read-only bind mount (where the suite may mount: as root) as the output; refused
    before anything is read or built, so it needs no earlier run."""
    output = tmp_path / "out"
    output.mkdir()
    mounted = tmp_path / "read-only"
    mounted.mkdir()
    mount = subprocess.run(["mount", "--bind", str(output), str(mounted)], capture_output=True)
    if mount.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mount.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(mounted)], check=True)
        refused = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipeline.cli",
                "run",
                "--task",
                "imdb",
                "--preset",
                "tiny",
                "--output",
                str(mounted),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        subprocess.run(["umount", str(mounted)], check=True)
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert f"error: cannot write to {mounted}: Read-only file system" in refused.stderr
    assert os.listdir(output) == []  # nothing was written
