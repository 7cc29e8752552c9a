"""The data steps on Beam's portable runners, as a self-hosted cluster runs them
(BEAM_RUNNER=portable, flink or spark: a job server, and the SDK workers in a worker pool that
runs the pipeline image): the IMDB pipeline's ExampleGen, StatisticsGen, SchemaGen and
Transform run once on the local runner and once on each engine below, with the Beam arguments
pipeline/cloud.py compiles for it, and an EXTERNAL worker pool started from the pipeline image
as a cluster's sidecar starts it: the image's ENTRYPOINT, Beam's boot binary, with
`--worker_pool` (port 50000), which starts each SDK worker through boot again (it fetches the
job's options and artifacts from the runner). The statistics and Transform's output (its
vocabularies and schema, and the transformed records) are the same.

The engines: Beam's PortableRunner with its job server embedded (`--job_endpoint=embed`, Beam's
own FnApiRunner: the slow tier), and a standalone Flink session cluster on loopback with Beam's
Flink job server (`scripts/flink.sh`; marked `engines`: `make test-engines`, on purpose)."""

import os
import socket
import subprocess
import time
import uuid

import pytest
import tensorflow as tf
from tensorflow_metadata.proto.v0 import statistics_pb2
from tfx.orchestration import metadata
from tfx.orchestration.local.local_dag_runner import LocalDagRunner
from tfx.orchestration.pipeline import Pipeline

from pipeline import configs
from pipeline.cloud import CloudConfig
from pipeline.factory import data_components
from pipeline.options import PipelineOptions
from pipeline.tasks import TASKS
from tests.pipeline_image import pipeline_image
from trainer_module.training.backup import folder_digest, records_digest

pytestmark = pytest.mark.slow  # the data steps twice, the second with workers in the image

BOOT = "/opt/apache/beam/boot"
POOL_PORT = 50000  # `boot --worker_pool` listens there, as Beam's sidecar spec expects
FLINK = configs.REPO_ROOT / "scripts" / "flink.sh"
ENGINES = [
    pytest.param("portable", id="embedded"),
    pytest.param("flink", id="flink", marks=pytest.mark.engines),
]


@pytest.fixture(scope="module")
def worker_pool(tmp_path_factory):
    """`boot --worker_pool` in a container of the pipeline image (buildah's chroot isolation:
    the host's network, so the job server here reaches it on loopback), with the folders the
    steps read and write mounted at their paths, as a cluster's shared file system would be."""
    image = pipeline_image()
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", POOL_PORT)) != 0, f"port {POOL_PORT} is taken"
    log = tmp_path_factory.mktemp("pool") / "worker_pool.log"
    container = f"tfxt-pool-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["buildah", "from", "--pull-never", "--quiet", "--name", container, image],
        check=True,
        capture_output=True,
    )
    shared = [str(tmp_path_factory.getbasetemp()), str(TASKS["imdb"].default_data_dir)]
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
def flink_job_server():
    """`scripts/flink.sh start`: the cluster and Beam's job server, stopped after the module."""
    started = subprocess.run([str(FLINK), "start"], capture_output=True, text=True)
    assert started.returncode == 0, started.stderr[-3000:]
    try:
        yield started.stdout.split("job server: ")[-1].strip()
    finally:
        subprocess.run([str(FLINK), "stop"], capture_output=True)


@pytest.fixture(scope="module")
def direct(tmp_path_factory):
    return data_steps(tmp_path_factory.mktemp("direct"), configs.BEAM_MODES["in_memory"])


@pytest.fixture(scope="module", params=ENGINES)
def portable(request, tmp_path_factory, worker_pool):
    """The data steps with the Beam arguments a job compiled for BEAM_RUNNER=<engine> carries
    (the pipeline image named as the SDK container: TFX then stages no package of the module
    files for the workers to pip install). (its components' output folders, what the worker
    pool logged during the run)"""
    port, log = worker_pool
    endpoint = (
        "embed" if request.param == "portable" else request.getfixturevalue("flink_job_server")
    )
    cloud = CloudConfig.from_environment(
        {
            "GOOGLE_CLOUD_PROJECT": "local",
            "PIPELINE_ROOT": "gs://unused/root",  # only Dataflow's arguments name it
            "PIPELINE_IMAGE": pipeline_image(),
            "BEAM_RUNNER": request.param,
            "BEAM_JOB_ENDPOINT": endpoint,
            "BEAM_WORKER_POOL": f"localhost:{port}",
        }
    )
    logged_before = len(log.read_text())
    steps = data_steps(tmp_path_factory.mktemp(request.param), cloud.beam_pipeline_args("portable"))
    return steps, log.read_text()[logged_before:]


def by_id(steps: dict, suffix: str) -> str:
    return next(folder for name, folder in steps.items() if name.endswith(suffix))


def test_the_workers_started_through_the_images_boot_binary(portable, worker_pool):
    _, text = portable
    # boot started the pool, the pool started each of this engine's SDK workers through boot,
    # and boot fetched the job's options from the runner before starting the harness.
    assert "Starting worker pool" in worker_pool[1].read_text()
    assert f"Starting worker with command ['{BOOT}', '--id=" in text, text[-2000:]
    assert "Provision info:" in text, text[-2000:]


def test_statistics_gen_writes_the_same_statistics_on_both_runners(direct, portable):
    steps, _ = portable
    ours, theirs = (
        statistics(by_id(direct, "StatisticsGen")),
        statistics(by_id(steps, "StatisticsGen")),
    )
    for split in ("train", "eval"):
        assert ours[split] == theirs[split], split


def test_transform_writes_the_same_vocabularies_and_records_on_both_runners(direct, portable):
    steps, _ = portable
    ours, theirs = by_id(direct, "Transform"), by_id(steps, "Transform")
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
