"""Every task's pipeline compiled to a KFP v2 PipelineJob, and the DAG read back from it."""

import json

import pytest

from pipeline.cloud import CloudConfig
from pipeline.kubeflow_runner import build_cloud_pipeline, compile_pipeline
from pipeline.options import PipelineOptions
from pipeline.tasks import TASKS

IMAGE = "us-central1-docker.pkg.dev/proj/tfx-transformers/pipeline:1.0"
ENVIRONMENT = {
    "GOOGLE_CLOUD_PROJECT": "proj",
    "GOOGLE_CLOUD_REGION": "europe-west4",
    "PIPELINE_ROOT": "gs://bucket/tt",
    "PIPELINE_IMAGE": IMAGE,
    "TRAINER_ACCELERATOR_TYPE": "NVIDIA_L4",
    "TRAINER_ACCELERATOR_COUNT": "2",
    "TRAINER_MACHINE_TYPE": "g2-standard-24",
    "TRAINER_REPLICA_COUNT": "3",
}
# Each step depends directly on the one before it.
CHAIN = [
    "StatisticsGen",
    "SchemaGen",
    "ExampleValidator",
    "AnomaliesGate",
    "Transform",
    "Trainer",
    "Evaluator",
    "Pusher",
    "ModelRegistry",
    "RunReport",
]
EVERY_FAMILY = [(task, model) for task in sorted(TASKS) for model in TASKS[task].model_families]


def compile_job(tmp_path, task, model=None, environ=ENVIRONMENT, target="vertex", **options):
    cloud = CloudConfig.from_environment(environ, target=target)
    options.setdefault("data", TASKS[task].default_data_dir)
    pipeline = build_cloud_pipeline(PipelineOptions(task=task, model=model, **options), cloud)
    path = tmp_path / f"{pipeline.pipeline_info.pipeline_name}.json"
    returned = compile_pipeline(pipeline, cloud, str(path))
    job = json.loads(path.read_text())
    assert job == returned
    return job


def tasks_of(job):
    return job["pipelineSpec"]["root"]["dag"]["tasks"]


def parameter(task_spec, name):
    """A task's constant parameter, as the executor receives it."""
    value = task_spec["inputs"]["parameters"][name]["runtimeValue"]["constant"]
    return json.loads(value) if isinstance(value, str) and value[:1] in "{[" else value


def executor_args(job, task_name):
    executor = job["pipelineSpec"]["root"]["dag"]["tasks"][task_name]["componentRef"]["name"]
    spec = job["pipelineSpec"]["components"][executor]["executorLabel"]
    return job["pipelineSpec"]["deploymentSpec"]["executors"][spec]["container"]


@pytest.mark.parametrize("task, model", EVERY_FAMILY)
def test_every_task_and_family_compiles_to_the_full_dag(tmp_path, task, model):
    job = compile_job(tmp_path, task, model)
    tasks = tasks_of(job)
    example_gen = next(name for name in tasks if name.endswith("ExampleGen"))
    # No resolver task: the Evaluator's baseline is the registry's champion, read by a
    # component that is never cached.
    assert set(tasks) == {example_gen, *CHAIN, "ChampionModel"}
    for upstream, downstream in zip([example_gen] + CHAIN, CHAIN):
        assert upstream in tasks[downstream].get("dependentTasks", []), (upstream, downstream)
    assert tasks["Evaluator"]["inputs"]["artifacts"]["baseline_model"] == {
        "taskOutputArtifact": {"producerTask": "ChampionModel", "outputArtifactKey": "model"}
    }
    assert tasks["ChampionModel"]["cachingOptions"] == {"enableCache": False}
    assert parameter(tasks["ChampionModel"], "model_name") == f"{task}-{model}".replace("_", "-")
    name = f"{task}-{model}".replace("_", "-")
    assert job["pipelineSpec"]["pipelineInfo"]["name"] == name
    assert job["runtimeConfig"]["gcsOutputDirectory"] == f"gs://bucket/tt/pipelines/{name}"
    # Every step runs in the pipeline image.
    executors = job["pipelineSpec"]["deploymentSpec"]["executors"]
    images = {e["container"]["image"] for e in executors.values() if "container" in e}
    assert images == {IMAGE}


def test_the_trainer_runs_as_a_vertex_training_job_on_gpu_workers(tmp_path):
    job = compile_job(tmp_path, "imdb")
    trainer = tasks_of(job)["Trainer"]
    container = executor_args(job, "Trainer")
    assert (
        "tfx.extensions.google_cloud_ai_platform.trainer.executor.GenericExecutor"
        in container["args"]
    )
    config = parameter(trainer, "custom_config")
    assert config["ai_platform_enable_vertex"] is True
    assert config["ai_platform_vertex_region"] == "europe-west4"
    training = config["ai_platform_training_args"]
    assert training["project"] == "proj"
    machine = {
        "machine_type": "g2-standard-24",
        "accelerator_type": "NVIDIA_L4",
        "accelerator_count": 2,
    }
    pool = {"machine_spec": machine, "container_spec": {"image_uri": IMAGE}}
    # The chief, then two workers: three replicas training with MultiWorkerMirroredStrategy.
    assert training["job_spec"]["worker_pool_specs"] == [
        {**pool, "replica_count": 1},
        {**pool, "replica_count": 2},
    ]
    # The training settings the run_fn reads travel with it.
    assert (config["model"], config["preset"], config["mixed_precision"]) == (
        "text_encoder",
        "small",
        "auto",
    )
    assert parameter(trainer, "run_fn") == "trainer_module.text_encoder.training.run_fn"


def test_train_and_eval_args_are_runtime_parameters_with_defaults(tmp_path):
    job = compile_job(tmp_path, "imdb", train_steps=300, eval_steps=7)
    spec = job["pipelineSpec"]
    assert spec["root"]["inputDefinitions"]["parameters"] == {
        "train_args": {"parameterType": "STRING"},
        "eval_args": {"parameterType": "STRING"},
        "data_dir": {"parameterType": "STRING"},
    }
    values = job["runtimeConfig"]["parameterValues"]
    assert json.loads(values["train_args"]) == {"num_steps": 300}
    assert json.loads(values["eval_args"]) == {"num_steps": 7}
    trainer = tasks_of(job)["Trainer"]
    for name in ("train_args", "eval_args"):
        assert trainer["inputs"]["parameters"][name] == {"componentInputParameter": name}


UNREADABLE = "gs://bucket-this-job-cannot-read"


@pytest.fixture
def no_data_access(monkeypatch):
    """Every file-system call on UNREADABLE fails the test, as a compile without read access
    to the data bucket would."""
    import tensorflow as tf
    from tfx.dsl.io import fileio

    def refuse(module, name):
        original = getattr(module, name)

        def guarded(path, *args, **kwargs):
            assert not str(path).startswith(UNREADABLE), f"{name}({path}) at compile time"
            return original(path, *args, **kwargs)

        monkeypatch.setattr(module, name, guarded)

    for name in ("exists", "isdir", "listdir", "glob", "open", "stat", "walk"):
        refuse(fileio, name)
    for name in ("exists", "isdir", "listdir", "glob", "stat", "walk", "GFile"):
        refuse(tf.io.gfile, name)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_compiles_without_reading_the_data_and_takes_its_folder_at_run_time(
    tmp_path, task, no_data_access
):
    data = f"{UNREADABLE}/{task}"
    job = compile_job(tmp_path, task, data=data)
    assert job["runtimeConfig"]["parameterValues"]["data_dir"] == data
    tasks = tasks_of(job)
    example_gen = next(name for name in tasks if name.endswith("ExampleGen"))
    assert tasks[example_gen]["inputs"]["parameters"]["input_base"] == {
        "componentInputParameter": "data_dir"
    }
    # What the compiled ExampleGen fixes: its options, not a layout (found when it runs).
    options = parameter(tasks[example_gen], "custom_config")["custom_config"]["value"]
    assert "format" not in options and "class_names" not in options


def test_a_span_pattern_compiles_to_the_drivers_span_resolution(tmp_path, no_data_access):
    job = compile_job(tmp_path, "imdb", data=f"{UNREADABLE}/reviews/span-{{SPAN}}")
    assert "data_dir" not in job["runtimeConfig"]["parameterValues"]  # fixed: the pattern
    example_gen = tasks_of(job)["ReviewsExampleGen"]
    assert parameter(example_gen, "input_base") == f"{UNREADABLE}/reviews"
    assert parameter(example_gen, "input_config") == {
        "splits": [{"name": "span", "pattern": "span-{SPAN}/*"}]
    }


def test_beam_steps_run_on_dataflow_with_the_pipeline_image(tmp_path):
    job = compile_job(tmp_path, "imdb")
    for step in ("ReviewsExampleGen", "StatisticsGen", "Transform", "Evaluator"):
        args = executor_args(job, step)["args"]
        assert "--runner=DataflowRunner" in args, step
        assert f"--sdk_container_image={IMAGE}" in args
        assert "--project=proj" in args and "--region=europe-west4" in args
        assert "--temp_location=gs://bucket/tt/tmp/imdb-text-encoder" in args


def test_pushed_versions_go_to_the_bucket_and_the_vertex_registry(tmp_path):
    job = compile_job(tmp_path, "imdb")
    tasks = tasks_of(job)
    destination = parameter(tasks["Pusher"], "push_destination")
    assert destination["filesystem"]["base_directory"] == (
        "gs://bucket/tt/serving_model/imdb-text-encoder"
    )
    registry = parameter(tasks["ModelRegistry"], "registry")
    assert (registry["backend"], registry["project"], registry["region"]) == (
        "vertex",
        "proj",
        "europe-west4",
    )


def test_with_tune_the_tuner_feeds_the_trainer_and_runs_on_vertex(tmp_path):
    job = compile_job(tmp_path, "translation", tune=True, tuner_trials=3)
    tasks = tasks_of(job)
    assert "Tuner" in tasks["Trainer"]["dependentTasks"]
    assert tasks["Trainer"]["inputs"]["artifacts"]["hyperparameters"] == {
        "taskOutputArtifact": {"producerTask": "Tuner", "outputArtifactKey": "best_hyperparameters"}
    }
    assert "Transform" in tasks["Tuner"]["dependentTasks"]
    config = parameter(tasks["Tuner"], "custom_config")
    assert config["trials"] == 3
    pools = config["ai_platform_tuning_args"]["job_spec"]["worker_pool_specs"]
    assert [pool["replica_count"] for pool in pools] == [1]  # trials run one at a time
    assert (
        "tfx.extensions.google_cloud_ai_platform.tuner.executor.Executor"
        in executor_args(job, "Tuner")["args"]
    )


def test_cpu_training_inside_the_pipeline_and_beam_in_the_step(tmp_path):
    environ = {
        **ENVIRONMENT,
        "VERTEX_TRAINING": "0",
        "BEAM_RUNNER": "direct",
        "MODEL_REGISTRY": "none",
    }
    job = compile_job(tmp_path, "cifar10", environ=environ)
    tasks = tasks_of(job)
    assert "ModelRegistry" not in tasks
    assert "RunReport" in tasks and "Pusher" in tasks["RunReport"]["dependentTasks"]
    assert (
        "tfx.components.trainer.executor.GenericExecutor" in executor_args(job, "Trainer")["args"]
    )
    assert "ai_platform_training_args" not in parameter(tasks["Trainer"], "custom_config")
    # The runner local runs use, not Beam's DirectRunner (which first tries to download Prism).
    assert "--runner=pipeline.local_beam.DirectRunner" in executor_args(job, "Transform")["args"]


def test_bert_cannot_be_tuned(tmp_path):
    with pytest.raises(ValueError, match="has no search space"):
        compile_job(tmp_path, "imdb", "bert", tune=True)


def test_a_cloud_job_takes_a_bert_preset_from_a_bucket_but_not_from_this_machine(tmp_path):
    job = compile_job(tmp_path, "imdb", "bert", overrides={"backbone_preset": "gs://b/bert"})
    config = parameter(tasks_of(job)["Transform"], "custom_config")
    assert config["backbone_preset"] == "gs://b/bert"
    with pytest.raises(ValueError, match="--bert-preset ./local/bert is a local path"):
        compile_job(tmp_path, "imdb", "bert", overrides={"backbone_preset": "./local/bert"})
