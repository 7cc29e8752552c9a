"""What each compile target holds, and what every compiled job needs of the image: artifact
type titles TFX's container entrypoint can import, resources, identities, the backup's place."""

import json

import pytest
import yaml
from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils as entrypoint
from tfx.utils import import_utils

from pipeline.cloud import CloudConfig
from pipeline.factory import create_inference_pipeline
from pipeline.image_check import instance_schemas
from pipeline.kubeflow_runner import JOB_NAME_PLACEHOLDER, compile_pipeline
from pipeline.options import PipelineOptions
from tests.kubeflow.test_compile import (
    ENVIRONMENT,
    EVERY_FAMILY,
    compile_job,
    executor_args,
    parameter,
    tasks_of,
)


def check_every_type_imports(job) -> set:
    """Imports every artifact type title of `job` as TFX's container entrypoint does before
    any executor runs (its own helpers); returns the titles."""
    from kfp.pipeline_spec import pipeline_spec_pb2

    titles = set()
    for schema in instance_schemas(job):
        type_schema = pipeline_spec_pb2.ArtifactTypeSchema(instance_schema=schema)
        path = entrypoint._retrieve_class_path(type_schema)
        artifact_class = import_utils.import_class_by_path(path)
        title = yaml.safe_load(schema)["title"]
        if not title.startswith("tfx."):  # a custom type: its title is its import path
            assert artifact_class.TYPE_NAME == title
        titles.add(title)
    return titles


@pytest.mark.parametrize("task, model", EVERY_FAMILY)
@pytest.mark.parametrize("target", ["vertex", "kubeflow"])
def test_every_artifact_type_of_every_compiled_job_imports_in_the_container(
    tmp_path, task, model, target
):
    environ = {**ENVIRONMENT, "MODEL_REGISTRY": "mlflow", "MLFLOW_TRACKING_URI": "http://m:5000"}
    titles = check_every_type_imports(
        compile_job(tmp_path, task, model, environ=environ, target=target)
    )
    assert {"tfx_transformers.RegisteredModel", "tfx_transformers.RunReport"} <= titles


def test_the_tuned_job_and_the_bulk_inference_job_types_import(tmp_path):
    check_every_type_imports(compile_job(tmp_path, "translation", tune=True, tuner_trials=2))
    # The bulk inference pipeline (PredictionsWriter's Predictions) of the image task.
    cloud = CloudConfig.from_environment(ENVIRONMENT)
    run = PipelineOptions(task="cifar10").resolve()
    pipeline = create_inference_pipeline(
        run, pipeline_root="gs://bucket/tt/pipelines/x", data_dir="gs://bucket/inputs"
    )
    job = compile_pipeline(pipeline, cloud, str(tmp_path / "infer.json"))
    assert "tfx_transformers.Predictions" in check_every_type_imports(job)


def test_the_kubeflow_target_holds_only_what_kubeflow_pipelines_2_runs(tmp_path):
    vertex = compile_job(tmp_path, "imdb")
    kubeflow = compile_job(tmp_path, "imdb", target="kubeflow")
    assert kubeflow["labels"]["tfx-transformers-target"] == "kubeflow"
    assert vertex["labels"]["tfx-transformers-target"] == "vertex"
    executors = kubeflow["pipelineSpec"]["deploymentSpec"]["executors"]
    assert all(set(e) == {"container"} for e in executors.values())  # no resolver
    assert not any("lifecycle" in e["container"] for e in executors.values())
    # Without the driver's fingerprint, the ExampleGen runs every time, never from the cache.
    assert tasks_of(kubeflow)["ReviewsExampleGen"]["cachingOptions"] == {"enableCache": False}
    # On Vertex AI the driver runs as the ExampleGen's pre-cache check, and decides.
    gen = executor_args(vertex, "ReviewsExampleGen")
    assert gen["lifecycle"]["preCacheCheck"]["command"][-1].endswith(
        "file_based_example_gen.driver"
    )
    assert tasks_of(vertex)["ReviewsExampleGen"]["cachingOptions"] == {"enableCache": True}


def test_the_registry_and_the_report_are_told_the_pipeline_and_the_job(tmp_path):
    environ = {**ENVIRONMENT, "MODEL_REGISTRY": "mlflow", "MLFLOW_TRACKING_URI": "http://m:5000"}
    tasks = tasks_of(compile_job(tmp_path, "imdb", environ=environ))
    for name in ("ModelRegistry", "RunReport"):
        assert parameter(tasks[name], "pipeline_name") == "imdb-text-encoder"
        run_id = tasks[name]["inputs"]["parameters"]["run_id"]["runtimeValue"]["constant"]
        assert run_id == JOB_NAME_PLACEHOLDER  # the orchestrator fills in the job's name


def test_steps_in_their_own_container_get_the_resources_set(tmp_path):
    environ = {
        **ENVIRONMENT,
        "VERTEX_TRAINING": "0",
        "BEAM_RUNNER": "direct",
        "BEAM_STEP_CPU": "8",
        "BEAM_STEP_MEMORY": "32G",
        "TRAINER_STEP_CPU": "12",
        "TRAINER_STEP_MEMORY": "85G",
    }
    job = compile_job(tmp_path, "imdb", environ=environ)
    for step in ("ReviewsExampleGen", "StatisticsGen", "Transform", "Evaluator"):
        assert executor_args(job, step)["resources"] == {
            "cpuLimit": 8.0,
            "memoryLimit": 32.0,
            "resourceCpuLimit": "8",
            "resourceMemoryLimit": "32G",
        }, step
    trainer = executor_args(job, "Trainer")["resources"]
    assert (trainer["resourceCpuLimit"], trainer["resourceMemoryLimit"]) == ("12", "85G")
    assert trainer["accelerator"] == {
        "type": "NVIDIA_L4",
        "count": "2",
        "resourceType": "NVIDIA_L4",
        "resourceCount": "2",
    }
    assert "resources" not in executor_args(job, "SchemaGen")
    # On Dataflow and Vertex AI training jobs, the machines are theirs: the steps get none.
    job = compile_job(tmp_path, "imdb", environ={**ENVIRONMENT, "BEAM_STEP_CPU": "8"})
    assert "resources" not in executor_args(job, "Transform")
    assert "resources" not in executor_args(job, "Trainer")


def test_service_accounts_of_the_training_job_and_the_dataflow_workers(tmp_path):
    environ = {
        **ENVIRONMENT,
        "TRAINING_SERVICE_ACCOUNT": "trainer@proj.iam.gserviceaccount.com",
        "DATAFLOW_SERVICE_ACCOUNT": "dataflow@proj.iam.gserviceaccount.com",
    }
    job = compile_job(tmp_path, "imdb", environ=environ)
    config = parameter(tasks_of(job)["Trainer"], "custom_config")
    job_spec = config["ai_platform_training_args"]["job_spec"]
    assert job_spec["service_account"] == "trainer@proj.iam.gserviceaccount.com"
    assert (
        "--service_account_email=dataflow@proj.iam.gserviceaccount.com"
        in (executor_args(job, "Transform")["args"])
    )


def test_the_training_backup_lives_outside_the_job_folder(tmp_path):
    config = parameter(tasks_of(compile_job(tmp_path, "imdb"))["Trainer"], "custom_config")
    assert config["backup_root"] == "gs://bucket/tt/backup/imdb-text-encoder"


def test_bad_resource_settings_are_refused_naming_the_variable():
    with pytest.raises(ValueError, match="BEAM_STEP_MEMORY"):
        CloudConfig.from_environment({**ENVIRONMENT, "BEAM_STEP_MEMORY": "lots"})
    with pytest.raises(ValueError, match="PIPELINE_ROOT must be a gs:// path"):
        CloudConfig.from_environment({**ENVIRONMENT, "PIPELINE_ROOT": "s3://bucket/tt"})


def test_a_compiled_job_file_is_what_compile_returns(tmp_path):
    job = compile_job(tmp_path, "cifar10", target="kubeflow")
    written = json.loads((tmp_path / "cifar10-vit.json").read_text())
    assert written == job


@pytest.mark.parametrize("uri", ["sqlite:////tmp/mlflow.db", "file:///tmp/mlruns", "mlruns", ""])
def test_a_cloud_job_refuses_a_registry_that_is_not_a_server(tmp_path, uri):
    environ = {**ENVIRONMENT, "MODEL_REGISTRY": "mlflow", "MLFLOW_TRACKING_URI": uri}
    with pytest.raises(ValueError, match="needs a tracking server.*http://HOST:5000"):
        compile_job(tmp_path, "imdb", environ=environ)


@pytest.mark.parametrize(
    "uri",
    [
        "http://127.0.0.1:5000",
        "http://localhost:5000",
        "https://LOCALHOST/mlflow",
        "http://127.1.2.3:5000",
        "http://[::1]:5000",
        "http://0.0.0.0:5000",
        "postgresql://tfxt@localhost:5432/mlflow",
    ],
)
def test_a_cloud_job_refuses_a_loopback_tracking_server_naming_what_to_use(tmp_path, uri):
    environ = {**ENVIRONMENT, "MODEL_REGISTRY": "mlflow", "MLFLOW_TRACKING_URI": uri}
    with pytest.raises(ValueError, match="loopback.*address on the cluster.*svc.cluster.local"):
        compile_job(tmp_path, "imdb", environ=environ)


@pytest.mark.parametrize(
    "uri", ["http://mlflow.kubeflow.svc.cluster.local:5000", "http://10.0.0.5:5000", "databricks"]
)
def test_a_cloud_job_takes_a_tracking_server_the_cluster_reaches(tmp_path, uri):
    environ = {**ENVIRONMENT, "MODEL_REGISTRY": "mlflow", "MLFLOW_TRACKING_URI": uri}
    assert compile_job(tmp_path, "imdb", environ=environ)


def test_the_kubeflow_target_runs_every_step_through_its_entrypoint(tmp_path):
    # TRAINER_ACCELERATOR_TYPE unset: no GPU asked for.
    environ = {k: v for k, v in ENVIRONMENT.items() if k != "TRAINER_ACCELERATOR_TYPE"}
    environ.update(VERTEX_TRAINING="0", BEAM_RUNNER="direct")
    job = compile_job(tmp_path, "imdb", environ=environ, target="kubeflow")
    for name in tasks_of(job):
        assert executor_args(job, name)["command"] == [
            "python",
            "-m",
            "pipeline.kubeflow_entrypoint",
        ], name
    # The Trainer in its own step gets no GPU unless asked, and Beam one worker per CPU asked.
    assert "resources" not in executor_args(job, "Trainer")
    assert "--direct_num_workers=1" in executor_args(job, "Transform")["args"]
