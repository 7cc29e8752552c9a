import pytest

from pipeline.cloud import ENVIRONMENT, CloudConfig

REQUIRED = {
    "GOOGLE_CLOUD_PROJECT": "proj",
    "PIPELINE_ROOT": "gs://bucket/tt/",
    "PIPELINE_IMAGE": "img:1",
}


def test_required_settings_are_named_when_missing():
    with pytest.raises(ValueError, match="set GOOGLE_CLOUD_PROJECT, PIPELINE_IMAGE"):
        CloudConfig.from_environment({"PIPELINE_ROOT": "gs://b"})


def test_defaults_and_paths():
    cloud = CloudConfig.from_environment(REQUIRED)
    assert (cloud.region, cloud.replica_count, cloud.vertex_training, cloud.registry) == (
        "us-central1",
        1,
        True,
        "vertex",
    )
    assert cloud.paths("imdb-text-encoder", "imdb") == {
        "pipeline_root": "gs://bucket/tt/pipelines/imdb-text-encoder",
        "serving_model_dir": "gs://bucket/tt/serving_model/imdb-text-encoder",
        "data_dir": "gs://bucket/tt/data/imdb",
        "registry_dir": "gs://bucket/tt/mlflow",
    }
    # One GPU machine, no workers: the strategy is MirroredStrategy or the default.
    assert cloud.worker_pool_specs() == [
        {
            "machine_spec": {
                "machine_type": "n1-standard-8",
                "accelerator_type": "NVIDIA_TESLA_T4",
                "accelerator_count": 1,
            },
            "replica_count": 1,
            "container_spec": {"image_uri": "img:1"},
        }
    ]


def test_every_environment_variable_names_a_field():
    fields = set(CloudConfig.__dataclass_fields__)
    # The target is compile's flag, not a setting of the environment.
    assert set(ENVIRONMENT.values()) == fields - {"target"}


def test_cpu_only_training_has_no_accelerator():
    cloud = CloudConfig.from_environment({**REQUIRED, "TRAINER_ACCELERATOR_TYPE": ""})
    assert cloud.worker_pool_specs()[0]["machine_spec"] == {"machine_type": "n1-standard-8"}


def test_switches_read_as_booleans_and_numbers():
    cloud = CloudConfig.from_environment(
        {**REQUIRED, "VERTEX_TRAINING": "0", "DATAFLOW_MAX_WORKERS": "32"}
    )
    assert cloud.vertex_training is False and cloud.vertex_training_config() is None
    assert "--max_num_workers=32" in cloud.beam_pipeline_args("p")


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("PIPELINE_ROOT", "/local/dir", "must be a gs:// path"),
        ("BEAM_RUNNER", "samza", "BEAM_RUNNER must be one of"),
        ("BEAM_RUNNER", "flink", "BEAM_RUNNER=flink needs BEAM_JOB_ENDPOINT"),
        ("TRAINER_ACCELERATOR_TYPE", "NVIDIA_TESLA_T5", "not a Vertex AI accelerator type"),
        ("MODEL_REGISTRY", "sagemaker", "MODEL_REGISTRY must be one of"),
        ("TRAINER_REPLICA_COUNT", "0", "TRAINER_REPLICA_COUNT must be >= 1"),
    ],
)
def test_bad_settings_are_refused(name, value, message):
    with pytest.raises(ValueError, match=message):
        CloudConfig.from_environment({**REQUIRED, name: value})


def test_a_trainer_in_its_own_step_gets_no_gpu_unless_asked():
    # A Vertex AI training job's replicas get the default accelerator ...
    vertex = CloudConfig.from_environment(REQUIRED)
    assert vertex.worker_pool_specs()[0]["machine_spec"]["accelerator_type"] == "NVIDIA_TESLA_T4"
    # ... a Trainer that trains in its own container, on either target, none unless asked.
    for target in ("vertex", "kubeflow"):
        cloud = CloudConfig.from_environment({**REQUIRED, "VERTEX_TRAINING": "0"}, target=target)
        assert cloud.step_resources("trainer") is None
    asked = CloudConfig.from_environment(
        {**REQUIRED, "VERTEX_TRAINING": "0", "TRAINER_ACCELERATOR_TYPE": "nvidia.com/gpu"},
        target="kubeflow",
    )
    accelerator = asked.step_resources("trainer").accelerator
    assert (accelerator.resource_type, accelerator.resource_count) == ("nvidia.com/gpu", "1")


def test_the_kubeflow_target_asks_for_an_accelerator_by_its_kubernetes_resource_name():
    environ = {**REQUIRED, "VERTEX_TRAINING": "0", "TRAINER_ACCELERATOR_TYPE": "NVIDIA_TESLA_T4"}
    with pytest.raises(ValueError, match="not a Kubernetes resource name.*nvidia.com/gpu"):
        CloudConfig.from_environment(environ, target="kubeflow")
    with pytest.raises(ValueError, match="not a Vertex AI accelerator type"):
        CloudConfig.from_environment({**environ, "TRAINER_ACCELERATOR_TYPE": "nvidia.com/gpu"})


@pytest.mark.parametrize(
    "target, cpu, workers, mode",
    [
        ("vertex", "", "0", "multi_processing"),  # every core of the step's own machine
        ("kubeflow", "", "1", "in_memory"),  # one worker: in the step's own process
        ("kubeflow", "6", "6", "multi_processing"),
        ("vertex", "3.5", "4", "multi_processing"),
    ],
)
def test_the_local_runner_in_a_step_has_one_worker_per_cpu_it_asks_for(target, cpu, workers, mode):
    environ = {**REQUIRED, "BEAM_RUNNER": "direct", "BEAM_STEP_CPU": cpu}
    args = CloudConfig.from_environment(environ, target=target).beam_pipeline_args("p")
    assert f"--direct_num_workers={workers}" in args
    assert f"--direct_running_mode={mode}" in args


@pytest.mark.parametrize(
    "runner, beam_class",
    [("portable", "PortableRunner"), ("flink", "FlinkRunner"), ("spark", "SparkRunner")],
)
def test_a_portable_runner_sends_the_beam_steps_to_a_job_server(runner, beam_class):
    environ = {**REQUIRED, "BEAM_RUNNER": runner, "BEAM_JOB_ENDPOINT": "beam-job-server:8099"}
    assert CloudConfig.from_environment(environ).beam_pipeline_args("p") == [
        f"--runner={beam_class}",
        "--job_endpoint=beam-job-server:8099",
        "--environment_type=EXTERNAL",
        "--environment_config=localhost:50000",
        "--environment_cache_millis=60000",  # a worker serves the job's next stage too
        *(["--execution_mode_for_batch=BATCH_FORCED"] if runner == "flink" else []),
        "--sdk_container_image=img:1",
    ]


def test_a_flink_job_takes_its_parallelism_and_no_other_engine_does():
    environ = {**REQUIRED, "BEAM_RUNNER": "flink", "BEAM_JOB_ENDPOINT": "flink:8099"}
    args = CloudConfig.from_environment({**environ, "FLINK_PARALLELISM": "16"}).beam_pipeline_args(
        "p"
    )
    assert "--parallelism=16" in args
    assert not any(
        a.startswith("--parallelism")
        for a in CloudConfig.from_environment(environ).beam_pipeline_args("p")
    )
    with pytest.raises(ValueError, match="FLINK_PARALLELISM=4: .* with BEAM_RUNNER=flink"):
        CloudConfig.from_environment({**environ, "BEAM_RUNNER": "spark", "FLINK_PARALLELISM": "4"})
    with pytest.raises(ValueError, match="FLINK_PARALLELISM=-1"):
        CloudConfig.from_environment({**environ, "FLINK_PARALLELISM": "-1"})
