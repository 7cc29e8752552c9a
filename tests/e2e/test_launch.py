"""The IMDB job compiled for Vertex AI, launched twice here through TFX's own container
entrypoints (`tfx-transformers launch`): the first launch pushes and registers version 1 with
no baseline; the second, on the same data with other training arguments, takes the first's
model from the registry as the Evaluator's baseline, reuses every data step from the cache,
and registers version 2, the new champion. Its Trainer runs as a Vertex AI training job of one
replica (the default VERTEX_TRAINING=1), a local process with Vertex AI's TF_CONFIG.

Slow tier, with the other compiled jobs (two training replicas, the Kubeflow target,
translation and CIFAR-10, a Trainer killed and resumed: tests/e2e/test_launch_slow.py): the two
launches take about 2.5 minutes here, which `make test`'s 8-minute budget cannot hold; CI runs
the slow tier on every change. The launcher's parts are in the default tier (tests/launch/)."""

import pytest

from pipeline.tasks import TASKS
from tests.e2e.launch_util import compile_job, launch, registered_versions

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
    root = tmp_path_factory.mktemp("launch")
    job = compile_job(root, "imdb", preset="tiny", train_steps=12)
    output = root / "out"
    data = ["--param", f"data_dir={TASKS['imdb'].default_data_dir}"]
    first = launch(job, output, *data)
    second = launch(job, output, *data, "--param", 'train_args={"num_steps": 16}')
    return root, first, second


def test_the_first_launch_pushes_and_registers_version_one_without_a_baseline(two_launches):
    root, first, _ = two_launches
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
    # Said before it ran: what differs from the cloud.
    assert "Beam steps compiled for Dataflow run on the local runner" in first["stderr"]


def test_the_second_launch_compares_with_the_first_and_registers_version_two(two_launches):
    root, first, second = two_launches
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
    assert registered_versions(root, "imdb-text-encoder") == [("1", []), ("2", ["champion"])]


def test_the_pushed_model_answers_raw_reviews(two_launches):
    from pipeline.predict import load_model, predict_texts

    _, _, second = two_launches
    model, _ = load_model(second["pushed_model"])
    (answer,) = predict_texts(model, ["A wonderful film."])
    assert answer["label"] in ("negative", "positive")


def test_the_run_report_names_the_pipeline_and_the_job(two_launches):
    _, _, second = two_launches
    page = open(second["report"]).read()
    assert "imdb-text-encoder" in page
    assert second["job"] in page
