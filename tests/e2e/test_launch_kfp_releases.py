"""The kubeflow job launched in the image once in the input shape of each older Kubeflow
Pipelines release range (the newest's: tests/e2e/test_launch_slow.py, in CI's slow tier), on the
Cloud Storage emulator, registering in a real MLflow tracking server. On purpose, as `make
test-kfp-releases` (a few minutes each): not in CI, whose slow tier holds the newest release's
launches within its budget."""

import re

import pytest

from pipeline.launch.shapes import KfpBackend
from pipeline.tasks import TASKS
from tests.e2e.launch_util import BUCKET, compile_job, launch, tracking_server
from tests.gcs_util import running_emulator
from tests.pipeline_image import pipeline_image

pytestmark = [pytest.mark.e2e, pytest.mark.kfp_releases]

IMDB = TASKS["imdb"].default_data_dir


@pytest.mark.parametrize("release", ["2.3.0", "2.4.1", "2.14.3"])
def test_the_kubeflow_job_runs_in_each_older_kfp_releases_shape(tmp_path, release):
    """`make test-kfp-releases`: the same job, once in the input shape of each older range's
    release (the newest's: the test above), in the image, on the Cloud Storage emulator:
    before 2.15 one executor output file for every task, before 2.5 the job placeholders left
    as compiled (the run's id taken from the output URIs), before 2.4 no salt."""
    image = pipeline_image()
    output = tmp_path / "out"
    with running_emulator(output / "launch" / "gcs", buckets=(BUCKET,), environ=False) as gcs:
        server = tracking_server(tmp_path / "server")
        try:
            job = compile_job(
                tmp_path,
                "imdb",
                server.url,
                {"VERTEX_TRAINING": "0", "BEAM_RUNNER": "direct"},
                target="kubeflow",
                preset="tiny",
                train_steps=8,
            )
            gcs.upload_tree(str(IMDB), f"gs://{BUCKET}/data/imdb")
            summary = launch(
                job,
                output,
                "--image",
                image,
                "--gcs-emulator",
                "--kfp-version",
                release,
                "--param",
                f"data_dir=gs://{BUCKET}/data/imdb",
            )
            run_id = registered_run_id(server.url, "imdb-text-encoder", "1")
        finally:
            server.stop()
    assert {t["state"] for t in summary["tasks"].values()} == {"succeeded"}
    assert summary["registered"]["version"] == "1" and summary["report"]
    if not KfpBackend.of(release).fills_job_placeholders:  # the id from the output URIs
        assert re.fullmatch(r"[0-9a-f-]{36}", run_id), run_id
    else:
        assert run_id.startswith("imdb-text-encoder-")  # the run's display name


def registered_run_id(tracking_uri: str, name: str, version: str) -> str:
    from mlflow.tracking import MlflowClient

    found = MlflowClient(tracking_uri).get_model_version(name, version)
    return found.tags["pipeline_run_id"]
