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
    assert set(ENVIRONMENT.values()) == fields


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
        ("BEAM_RUNNER", "flink", "BEAM_RUNNER must be one of"),
        ("MODEL_REGISTRY", "sagemaker", "MODEL_REGISTRY must be one of"),
        ("TRAINER_REPLICA_COUNT", "0", "TRAINER_REPLICA_COUNT must be >= 1"),
    ],
)
def test_bad_settings_are_refused(name, value, message):
    with pytest.raises(ValueError, match=message):
        CloudConfig.from_environment({**REQUIRED, name: value})
