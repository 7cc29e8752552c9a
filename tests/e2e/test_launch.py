"""The IMDB job compiled for Vertex AI, launched twice here inside the pipeline image (`make
image`), every task and both training replicas in a container of their own, through TFX's own
container entrypoints (`tfx-transformers launch --image`): the first launch pushes and
registers version 1 with no baseline; the second, on the same data with other training
arguments, takes the first's model from the registry (a real MLflow tracking server on
loopback) as the Evaluator's baseline, reuses every data step from the cache, and registers
version 2, the new champion. Its Trainer runs as a Vertex AI training job of two replicas (the
chief and a worker, training with MultiWorkerMirroredStrategy), each in the image with the
CLUSTER_SPEC and TF_CONFIG Vertex AI sets.

Slow tier, with the other compiled jobs (the Kubeflow target in its backend's input shape,
translation and CIFAR-10, a Trainer killed and resumed: tests/e2e/test_launch_slow.py). The
launcher's parts are in the default tier (tests/launch/)."""

import pytest

from pipeline.tasks import TASKS
from tests.e2e.launch_util import (
    compile_job,
    data_in_bucket,
    launch,
    registered_versions,
    tracking_server,
)
from tests.pipeline_image import pipeline_image

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DATA_STEPS = [
    "ReviewsExampleGen",
    "StatisticsGen",
    "SchemaGen",
    "ExampleValidator",
    "AnomaliesGate",
    "Transform",
]


@pytest.fixture(scope="module")
def two_launches(tmp_path_factory):
    image = pipeline_image()
    root = tmp_path_factory.mktemp("launch")
    server = tracking_server(root / "server")
    try:
        job = compile_job(
            root,
            "imdb",
            server.url,
            {"TRAINER_REPLICA_COUNT": "2"},
            preset="tiny",
            train_steps=12,
        )
        output = root / "out"
        data = data_in_bucket(output, TASKS["imdb"].default_data_dir, "imdb")
        common = ["--image", image, "--param", f"data_dir={data}"]
        first = launch(job, output, *common)
        second = launch(job, output, *common, "--param", 'train_args={"num_steps": 16}')
        yield root, server.url, first, second
    finally:
        server.stop()


def test_the_first_launch_pushes_and_registers_version_one_without_a_baseline(two_launches):
    root, _, first, _ = two_launches
    assert first["status"] == "succeeded"
    assert set(first["tasks"]) == {
        *DATA_STEPS,
        "ChampionModel",
        "Trainer",
        "Evaluator",
        "Pusher",
        "ModelRegistry",
        "RunReport",
    }
    assert {t["state"] for t in first["tasks"].values()} == {"succeeded"}
    assert first["baseline_model"] is None  # no champion yet
    assert first["blessed"] is True
    assert first["pushed_model"].startswith(
        str(root / "out" / "gs" / "demo-bucket" / "root" / "serving_model" / "imdb-text-encoder")
    )
    assert first["registered"] == {
        "registry": "mlflow",
        "name": "imdb-text-encoder",  # the pipeline's name, told to the step by the job
        "version": "1",
        "alias": "champion",
        "uri": "models:/imdb-text-encoder/1",
    }
    assert first["training"]["train_steps"] == 12
    # Said before it ran: where the tasks run, what differs from the cloud.
    assert "inside the image localhost/" in first["stderr"]
    assert "Beam steps compiled for Dataflow run on the local runner" in first["stderr"]


def test_every_task_and_both_training_replicas_ran_inside_the_image(two_launches):
    _, _, first, _ = two_launches
    log = open(f"{first['logs']}/Trainer.log").read()
    # The job's two replicas, each told its role by TF_CONFIG, trained together, in the image.
    for pool in (0, 1):
        assert (
            f"worker pool {pool}: 1 x n1-standard-8 with 1 NVIDIA_TESLA_T4: replica 0 runs "
            "inside the image" in log
        )
    assert "Training as chief: MultiWorkerMirroredStrategyForKeras with 2 replicas" in log
    assert "Training as worker 0: MultiWorkerMirroredStrategyForKeras with 2 replicas" in log
    assert log.count(", a container of localhost/") == 3  # the task, then each replica
    for task in first["tasks"]:
        assert ", a container of localhost/" in open(f"{first['logs']}/{task}.log").read(), task


def test_the_second_launch_compares_with_the_first_and_registers_version_two(two_launches):
    _, url, first, second = two_launches
    assert second["status"] == "succeeded"
    for step in DATA_STEPS:  # the same data and settings: Vertex AI's cache answers
        assert second["tasks"][step]["state"] == "cached", step
    assert second["tasks"]["Trainer"]["state"] == "succeeded"  # other training arguments
    assert second["tasks"]["ChampionModel"]["state"] == "succeeded"  # never cached
    assert second["baseline_model"]["version"] == "1"
    assert second["baseline_model"]["source"] == first["pushed_model"]
    assert second["training"]["train_steps"] == 16
    assert second["registered"]["version"] == "2"
    assert second["pushed_version"] != first["pushed_version"]
    assert registered_versions(url, "imdb-text-encoder") == [("1", []), ("2", ["champion"])]


def test_the_pushed_model_answers_raw_reviews(two_launches):
    from pipeline.predict import load_model, predict_texts

    _, _, _, second = two_launches
    model, _ = load_model(second["pushed_model"])
    (answer,) = predict_texts(model, ["A wonderful film."])
    assert answer["label"] in ("negative", "positive")


def test_the_run_report_names_the_pipeline_and_the_job(two_launches):
    _, _, _, second = two_launches
    page = open(second["report"]).read()
    assert "imdb-text-encoder" in page
    assert second["job"] in page
