"""The data steps on Beam's portable runner, as a self-hosted cluster runs them
(BEAM_RUNNER=portable, flink or spark: a job server, and the SDK workers in a worker pool that
runs the pipeline image): the IMDB pipeline's ExampleGen, StatisticsGen, SchemaGen and
Transform run once on the local runner and once on Beam's PortableRunner with its job server
embedded (`--job_endpoint=embed`, what a Flink or Spark job server does on a cluster) and an
EXTERNAL worker pool (`apache_beam.runners.worker.worker_pool_main`, a process this test
starts, as the pool beside a cluster's task managers), on the same data. The statistics and
Transform's output (its vocabularies and schema, and the transformed records) are the same.

Not here: a Flink or Spark cluster and Beam's job-server jars, which come from Maven Central
(these machines do not reach it)."""

import os
import socket
import subprocess
import sys
import time

import pytest
import tensorflow as tf
from tensorflow_metadata.proto.v0 import statistics_pb2
from tfx.orchestration import metadata
from tfx.orchestration.local.local_dag_runner import LocalDagRunner
from tfx.orchestration.pipeline import Pipeline

from pipeline import configs
from pipeline.factory import data_components
from pipeline.options import PipelineOptions
from pipeline.tasks import TASKS
from tests.ports import free_port
from trainer_module.training.backup import folder_digest, records_digest

pytestmark = pytest.mark.slow  # the data steps twice, the second with worker processes


@pytest.fixture(scope="module")
def worker_pool(tmp_path_factory):
    """Beam's worker pool on a loopback port; its workers are this environment's Python (the
    pool starts `python` from PATH) with the project importable, as in the image."""
    port = free_port()
    log = tmp_path_factory.mktemp("pool") / "worker_pool.log"
    environment = {
        **os.environ,
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
        "PYTHONPATH": str(configs.REPO_ROOT),
    }
    with open(log, "ab") as out:
        pool = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "apache_beam.runners.worker.worker_pool_main",
                f"--service_port={port}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environment,
            cwd=str(configs.REPO_ROOT),
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while True:
        assert pool.poll() is None, log.read_text()[-2000:]
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert time.monotonic() < deadline, "the worker pool did not start"
        time.sleep(0.3)
    yield port, log
    os.killpg(pool.pid, 9)
    pool.wait(timeout=30)


def data_steps(root, beam_args) -> dict:
    """{component: its output folder} of ExampleGen, StatisticsGen, SchemaGen (inferred) and
    Transform of the tiny IMDB run, run with `beam_args` into `root`."""
    run = PipelineOptions(task="imdb", preset="tiny").resolve()
    components = data_components(run, str(TASKS["imdb"].default_data_dir), lineage_resolvers=False)
    kept = ["example_gen", "statistics_gen", "schema_gen", "transform"]
    # The Transform waits only on its inputs here (no validators or gate in this pipeline).
    transform = components["transform"]
    for upstream in list(transform.upstream_nodes):
        if upstream not in [components[k] for k in kept]:
            transform.remove_upstream_node(upstream)
    pipeline = Pipeline(
        pipeline_name="portable",
        pipeline_root=str(root / "pipeline_root"),
        components=[components[k] for k in kept],
        enable_cache=False,
        metadata_connection_config=metadata.sqlite_metadata_connection_config(
            str(root / "metadata.sqlite")
        ),
        beam_pipeline_args=beam_args,
    )
    LocalDagRunner().run(pipeline)
    return {
        component.id: os.path.join(str(root / "pipeline_root"), component.id)
        for component in pipeline.components
    }


def newest(folder: str, key: str) -> str:
    """The newest execution's output `key` under a component's folder."""
    executions = sorted(os.listdir(os.path.join(folder, key)), key=int)
    return os.path.join(folder, key, executions[-1])


def statistics(folder: str) -> dict:
    found = {}
    for split in ("train", "eval"):
        stats = statistics_pb2.DatasetFeatureStatisticsList()
        path = os.path.join(newest(folder, "statistics"), f"Split-{split}", "FeatureStats.pb")
        stats.ParseFromString(tf.io.gfile.GFile(path, "rb").read())
        found[split] = stats
    return found


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory, worker_pool):
    port, log = worker_pool
    direct = data_steps(tmp_path_factory.mktemp("direct"), configs.BEAM_MODES["in_memory"])
    portable = data_steps(
        tmp_path_factory.mktemp("portable"),
        [
            "--runner=PortableRunner",
            "--job_endpoint=embed",
            "--environment_type=EXTERNAL",
            f"--environment_config=localhost:{port}",
        ],
    )
    return direct, portable, log


def by_id(steps: dict, suffix: str) -> str:
    return next(folder for name, folder in steps.items() if name.endswith(suffix))


def test_the_workers_ran_in_the_external_pool(both_runs):
    _, _, log = both_runs
    # The job server asked the pool for SDK workers, which ran the steps' Python code.
    assert "Starting worker with command" in log.read_text(), log.read_text()[-2000:]


def test_statistics_gen_writes_the_same_statistics_on_both_runners(both_runs):
    direct, portable, _ = both_runs
    ours, theirs = (
        statistics(by_id(direct, "StatisticsGen")),
        statistics(by_id(portable, "StatisticsGen")),
    )
    for split in ("train", "eval"):
        assert ours[split] == theirs[split], split


def test_transform_writes_the_same_vocabularies_and_records_on_both_runners(both_runs):
    direct, portable, _ = both_runs
    ours, theirs = by_id(direct, "Transform"), by_id(portable, "Transform")
    graph = ("transform_fn/assets", "transformed_metadata")
    assert folder_digest(newest(ours, "transform_graph"), graph) == folder_digest(
        newest(theirs, "transform_graph"), graph
    )
    for split in ("train", "eval"):
        patterns = [
            os.path.join(newest(folder, "transformed_examples"), f"Split-{split}", "*")
            for folder in (ours, theirs)
        ]
        digests = [records_digest([pattern]) for pattern in patterns]
        assert digests[0]["records"] > 0
        assert digests[0] == digests[1], split
