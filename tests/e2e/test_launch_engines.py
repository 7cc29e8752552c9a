"""The IMDB job compiled for a team's own Beam engine (`--target kubeflow`, BEAM_RUNNER=flink or
spark, BEAM_JOB_ENDPOINT the job server), launched as compiled (`launch --image`): every task
in a container of the pipeline image, each Beam step (ExampleGen, StatisticsGen, Transform,
the Evaluator) sent from there to Beam's job server in front of a real cluster on this machine
(scripts/flink.sh: a Flink JobManager and TaskManager; scripts/spark.sh: a Spark master and
worker; each a process of its own), its SDK workers started through the image's boot binary by
a worker pool in the image (the EXTERNAL environment the job names, localhost:50000, as a
sidecar beside each task manager). StatisticsGen, Transform and the Evaluator then run again
here, on the local runner, from the input artifacts the launch recorded: the statistics, the
transform graph, the transformed records and the metrics are the same.

Flink: the slow tier. Spark: marked `engines` (`make test-engines`, after `make spark`)."""

import json
import os
import subprocess

import pytest
import tensorflow as tf
import tensorflow_model_analysis as tfma
from google.protobuf import json_format
from tensorflow_metadata.proto.v0 import statistics_pb2

from pipeline import configs
from pipeline.launch.execution import LOCAL_BEAM, command_line
from pipeline.launch.job import CompiledJob
from pipeline.tasks import TASKS
from tests import beam_engines
from tests.e2e.launch_util import compile_job, data_in_bucket, launch
from tests.pipeline_image import pipeline_image
from trainer_module.training.backup import folder_digest, records_digest

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("beam_engines")]

ENGINES = [
    pytest.param("flink", id="flink"),
    pytest.param("spark", id="spark", marks=pytest.mark.engines),
]
BEAM_STEPS = ("ReviewsExampleGen", "StatisticsGen", "Transform", "Evaluator")
# The portable runners' options a compiled step carries (pipeline/cloud.py).
ENGINE_OPTIONS = (
    "--runner=",
    "--job_endpoint=",
    "--environment_type=",
    "--environment_config=",
    "--environment_cache_millis=",
    "--execution_mode_for_batch=",
    "--sdk_container_image=",
)


@pytest.fixture(scope="module", params=ENGINES)
def launched(request, tmp_path_factory):
    """The job launched on the engine: (its folder, the job's file, the launch's summary, what
    the worker pool logged, how many jobs the engine finished)."""
    engine = request.param
    image = pipeline_image()
    folder = tmp_path_factory.mktemp(engine)
    shared = [str(tmp_path_factory.getbasetemp())]
    pool = beam_engines.worker_pool(image, shared, folder / "worker_pool.log")
    with beam_engines.running(engine) as endpoint, pool as (port, log):
        environ = {
            "VERTEX_TRAINING": "0",
            "MODEL_REGISTRY": "none",
            "BEAM_RUNNER": engine,
            "BEAM_JOB_ENDPOINT": endpoint,
            "BEAM_WORKER_POOL": f"localhost:{port}",
        }
        job = compile_job(
            folder,
            "imdb",
            "",
            environ,
            target="kubeflow",
            preset="tiny",
            train_steps=8,
            blessing_threshold=0.0,
        )
        output = folder / "out"
        data = data_in_bucket(output, TASKS["imdb"].default_data_dir, "imdb")
        summary = launch(job, output, "--image", image, "--param", f"data_dir={data}")
        jobs = beam_engines.finished_jobs(engine)
        return folder, job, summary, log.read_text(), jobs


def recorded(output) -> dict:
    """{task: {output key: [artifact]}} of the launch's store."""
    store = json.loads((output / "launch" / "metadata.json").read_text())
    found: dict = {}
    for artifact in store["artifacts"]:
        found.setdefault(artifact["task"], {})[artifact["output_key"]] = [artifact]
    return found


def uri(output, task: str, key: str) -> str:
    return recorded(output)[task][key][0]["uri"]


def rerun_here(job_file, output, task: str, folder) -> dict:
    """The task's compiled command line run again here, its engine's options swapped for the
    local runner's, on the input artifacts the launch recorded; {output key: its folder}."""
    job = CompiledJob(json.loads(job_file.read_text()), str(output))
    container = job.executor_of(task)["container"]
    args = [a for a in container["args"] if not a.startswith(ENGINE_OPTIONS)] + LOCAL_BEAM
    outputs = {
        key: [
            {
                "name": f"rerun-{key}",
                "instance_schema": spec["artifactType"]["instanceSchema"],
                "uri": str(folder / key),
            }
        ]
        for key, spec in job.output_definitions(task).items()
    }
    executor_input = job.executor_input(
        job.input_artifacts(task, recorded(output)),
        job.parameter_values(task),
        outputs,
        str(folder / "output_metadata.json"),
    )
    line = command_line(container["command"], args, executor_input)
    ran = subprocess.run(line, cwd=configs.REPO_ROOT, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return {key: str(folder / key) for key in outputs}


def statistics(folder: str) -> dict:
    """{split: {field path: value}} of StatisticsGen's output, each feature's statistics under
    its own path (runners list the features in different orders)."""
    found = {}
    for split in ("train", "eval"):
        stats = statistics_pb2.DatasetFeatureStatisticsList()
        path = os.path.join(folder, f"Split-{split}", "FeatureStats.pb")
        with tf.io.gfile.GFile(path, "rb") as f:
            stats.ParseFromString(f.read())
        leaves: dict = {}
        for dataset in stats.datasets:
            dataset_fields = json_format.MessageToDict(dataset)
            features = dataset_fields.pop("features", [])
            flatten(dataset_fields, dataset.name, leaves)
            for feature in features:
                flatten(feature, f"{dataset.name}/{'.'.join(feature['path']['step'])}", leaves)
        found[split] = leaves
    return found


def flatten(value, path: str, into: dict) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{path}/{key}", into)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            flatten(item, f"{path}[{index}]", into)
    else:
        into[path] = value


def assert_same(ours: dict, theirs: dict, what: str) -> None:
    """The same fields, the same text, the same numbers to float64 rounding (the same sums,
    added up in another order by another runner)."""
    assert set(ours) == set(theirs), (what, set(ours) ^ set(theirs))
    numbers = {k for k, v in theirs.items() if isinstance(v, float)}
    assert {k: ours[k] for k in numbers} == pytest.approx(
        {k: theirs[k] for k in numbers}, rel=1e-9, abs=1e-12, nan_ok=True
    ), what
    assert {k: v for k, v in ours.items() if k not in numbers} == {
        k: v for k, v in theirs.items() if k not in numbers
    }, what


def metrics(folder: str) -> dict:
    """{slice: {metric name: value}} of an Evaluator's output."""
    found = {}
    for metrics_for_slice in tfma.load_metrics(folder):
        found[str(metrics_for_slice.slice_key)] = {
            pair.key.name: pair.value.double_value.value
            for pair in metrics_for_slice.metric_keys_and_values
            if pair.value.HasField("double_value")
        }
    return found


def test_every_task_succeeded_with_each_beam_step_on_the_engine(launched):
    _, _, summary, pool_log, jobs = launched
    assert summary["status"] == "succeeded", summary.get("stderr", "")[-3000:]
    assert {task["state"] for task in summary["tasks"].values()} == {"succeeded"}
    assert summary["blessed"] is True
    assert os.path.exists(os.path.join(summary["pushed_model"], "saved_model.pb"))
    # One engine job per Beam step, each run to its end on the cluster ...
    assert jobs == len(BEAM_STEPS)
    # ... its workers started by the pool through boot, which fetched the job's options.
    assert f"Starting worker with command ['{beam_engines.BOOT}', '--id=" in pool_log
    assert "Provision info:" in pool_log


def test_statistics_and_transform_equal_the_local_runners_from_the_same_examples(
    launched, tmp_path
):
    _, job, _, _, _ = launched
    output = launched[0] / "out"
    here = rerun_here(job, output, "StatisticsGen", tmp_path / "statistics_gen")
    ours = statistics(here["statistics"])
    theirs = statistics(uri(output, "StatisticsGen", "statistics"))
    for split in ("train", "eval"):
        assert len(ours[split]) > 100
        assert_same(ours[split], theirs[split], split)

    here = rerun_here(job, output, "Transform", tmp_path / "transform")
    graph = ("transform_fn/assets", "transformed_metadata")
    assert folder_digest(here["transform_graph"], graph) == folder_digest(
        uri(output, "Transform", "transform_graph"), graph
    )
    for split in ("train", "eval"):
        folders = (here["transformed_examples"], uri(output, "Transform", "transformed_examples"))
        digests = [records_digest([os.path.join(f, f"Split-{split}", "*")]) for f in folders]
        assert digests[0]["records"] > 0
        assert digests[0] == digests[1], split


def test_the_evaluators_metrics_equal_the_local_runners_on_the_same_model_and_examples(
    launched, tmp_path
):
    _, job, _, _, _ = launched
    output = launched[0] / "out"
    here = rerun_here(job, output, "Evaluator", tmp_path / "evaluator")
    ours, theirs = metrics(here["evaluation"]), metrics(uri(output, "Evaluator", "evaluation"))
    assert set(ours) == set(theirs) and len(ours) > 1  # the overall slice and feature slices
    for slice_key, values in theirs.items():
        assert set(values) >= {"auc", "binary_accuracy", "example_count"}, slice_key
        assert_same(ours[slice_key], values, slice_key)
    assert os.listdir(here["blessing"]) == os.listdir(uri(output, "Evaluator", "blessing"))
