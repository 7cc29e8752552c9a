"""The Kubeflow target's entrypoint (pipeline/kubeflow_entrypoint.py) against the ExecutorInput
each Kubeflow Pipelines 2 backend builds (launch's KubeflowShape): TFX 1.16's own entrypoint
fails on it (untyped inputs, tensorflow/tfx#7768; from KFP 2.5 the `executor-logs` output), the
project's makes it the input TFX reads and the compiled steps run."""

import json
import os
import uuid

import pytest
import tensorflow as tf

from pipeline import kubeflow_entrypoint
from pipeline.kubeflow_entrypoint import (
    DECLARED_OUTPUTS,
    Invocation,
    fill_input_types,
    fixed_arguments,
    run_id_of,
)
from pipeline.kubeflow_runner import KUBEFLOW_ENTRYPOINT, TFX_ENTRYPOINT
from pipeline.launch.launcher import Launch
from pipeline.launch.runners import LocalRunner
from pipeline.tasks import TASKS
from tests.kubeflow.test_compile import ENVIRONMENT, compile_job

EXAMPLES = "title: tfx.Examples\ntype: object\n"
SPEC = {"artifacts": {"examples": {"artifactType": {"instanceSchema": EXAMPLES}}}}


def executor_input(type_given: dict) -> dict:
    artifact = {"name": "17", "type": type_given, "uri": "gs://b/e", "metadata": {}}
    return {"inputs": {"artifacts": {"examples": {"artifacts": [artifact]}}}}


def test_an_empty_input_type_is_filled_from_the_components_definitions():
    filled = fill_input_types(executor_input({"instanceSchema": ""}), SPEC)
    (artifact,) = filled["inputs"]["artifacts"]["examples"]["artifacts"]
    assert artifact["type"] == {"instanceSchema": EXAMPLES}
    # A type the orchestrator sent (Vertex AI) is kept as it is.
    given = {"schemaTitle": "tfx.Examples"}
    kept = fill_input_types(executor_input(given), SPEC)
    assert kept["inputs"]["artifacts"]["examples"]["artifacts"][0]["type"] == given


@pytest.mark.parametrize("joined", [False, True])
def test_the_command_line_keeps_every_argument_but_the_filled_input(joined):
    invocation = json.dumps(executor_input({"instanceSchema": ""}))
    spec = json.dumps(SPEC)
    if joined:
        argv = ["x", f"--json_serialized_invocation_args={invocation}"]
        argv += [f"--json_serialized_inputs_spec_args={spec}", "--runner=DirectRunner"]
    else:
        argv = ["x", "--json_serialized_invocation_args", invocation]
        argv += ["--json_serialized_inputs_spec_args", spec, "--runner=DirectRunner"]
    fixed = fixed_arguments(argv)
    assert len(fixed) == len(argv) and fixed[-1] == "--runner=DirectRunner"
    text = next(a for a in fixed if "instanceSchema" in a and "inputs" in a and "17" in a)
    sent = json.loads(text.split("=", 1)[1] if joined else text)
    assert sent["inputs"]["artifacts"]["examples"]["artifacts"][0]["type"]["instanceSchema"]


RUN = str(uuid.uuid4())
SALT = str(uuid.uuid4())


def kfp_input(outputs_named: bool, salted: bool, logs: bool, output_file: str) -> dict:
    """A StatisticsGen's ExecutorInput as a backend of each kind builds it."""
    root = f"gs://b/root/p/{RUN}/StatisticsGen" + (f"/{SALT}" if salted else "")
    outputs = {
        "statistics": {
            "artifacts": [
                {
                    **({"name": "statistics"} if outputs_named else {}),
                    "type": {"instanceSchema": "title: tfx.ExampleStatistics\n"},
                    "uri": f"{root}/statistics",
                }
            ]
        }
    }
    if logs:
        outputs["executor-logs"] = {
            "artifacts": [
                {"type": {"schemaTitle": "system.Artifact"}, "uri": f"{root}/executor-logs"}
            ]
        }
    return {
        "inputs": {
            "parameterValues": {"run_id": "{{$.pipeline_job_name}}", "exclude_splits": "[]"},
            "artifacts": executor_input({"instanceSchema": ""})["inputs"]["artifacts"],
        },
        "outputs": {"artifacts": outputs, "outputFile": output_file},
    }


def invocation_of(executor_input: dict) -> Invocation:
    argv = ["x", "--json_serialized_invocation_args", json.dumps(executor_input)]
    argv += ["--json_serialized_inputs_spec_args", json.dumps(SPEC)]
    return Invocation([*argv, DECLARED_OUTPUTS, '["statistics"]', "--runner=DirectRunner"])


def sent(invocation: Invocation) -> dict:
    return json.loads(invocation.argv[invocation.argv.index(kubeflow_entrypoint.INVOCATION) + 1])


def test_undeclared_outputs_are_set_aside_and_the_declared_argument_never_reaches_tfx():
    invocation = invocation_of(kfp_input(True, True, True, "/gcs/b/x/output_metadata.json"))
    assert invocation.set_aside == ["executor-logs"]
    assert list(sent(invocation)["outputs"]["artifacts"]) == ["statistics"]
    assert DECLARED_OUTPUTS not in invocation.argv and '["statistics"]' not in invocation.argv
    assert invocation.argv[-1] == "--runner=DirectRunner"
    assert invocation.output_file is None  # 2.15 on: the file is already the task's own


@pytest.mark.parametrize("salted", [False, True])
def test_a_placeholder_left_as_compiled_gets_the_runs_id_from_the_output_uris(salted):
    """Before KFP 2.5 the driver fills in no placeholder: every run would record the same
    "{{$.pipeline_job_name}}" as its id."""
    executor_input = kfp_input(False, salted, False, kubeflow_entrypoint.LEGACY_OUTPUT_FILE)
    assert run_id_of(executor_input) == RUN
    invocation = invocation_of(executor_input)
    assert invocation.filled == ["run_id"]
    assert sent(invocation)["inputs"]["parameterValues"] == {"run_id": RUN, "exclude_splits": "[]"}


def test_without_a_uri_naming_the_run_a_placeholder_is_an_error_not_a_shared_id():
    executor_input = kfp_input(False, False, False, "/x")
    executor_input["outputs"]["artifacts"]["statistics"]["artifacts"][0]["uri"] = "gs://b/s"
    with pytest.raises(ValueError, match="cannot tell the run's id"):
        invocation_of(executor_input)


@pytest.mark.parametrize("salted", [False, True])
def test_the_legacy_output_file_becomes_the_tasks_own_and_is_copied_back(
    tmp_path, monkeypatch, salted
):
    """Before KFP 2.15 every task's output file is /tmp/kfp_outputs/output_metadata.json, from
    which TFX takes the task root and unique id: TFX gets the task's own, as from 2.15."""
    legacy = tmp_path / "kfp_outputs" / "output_metadata.json"
    monkeypatch.setattr(kubeflow_entrypoint, "LEGACY_OUTPUT_FILE", str(legacy))
    invocation = invocation_of(kfp_input(False, salted, True, str(legacy)))
    task_root = f"/gcs/b/root/p/{RUN}/StatisticsGen" + (f"/{SALT}" if salted else "")
    assert invocation.output_file == f"{task_root}/output_metadata.json"
    assert sent(invocation)["outputs"]["outputFile"] == invocation.output_file
    invocation.output_file = str(tmp_path / "task" / "output_metadata.json")  # TFX wrote here
    os.makedirs(tmp_path / "task")
    (tmp_path / "task" / "output_metadata.json").write_text('{"artifacts": {}}')
    invocation.copy_output_file()
    assert legacy.read_text() == '{"artifacts": {}}'


def write_examples(uri: str) -> None:
    """A tiny Examples artifact as an ExampleGen writes it: a gzipped TFRecord per split."""
    for split in ("train", "eval"):
        folder = f"{uri}/Split-{split}"
        tf.io.gfile.makedirs(folder)
        options = tf.io.TFRecordOptions(compression_type="GZIP")
        with tf.io.TFRecordWriter(f"{folder}/data_tfrecord-00000-of-00001.gz", options) as w:
            for i in range(8):
                feature = {
                    "text": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[f"review {i}".encode()])
                    ),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                w.write(example.SerializeToString())


def with_entrypoint(job: dict, entrypoint: str) -> dict:
    for executor in job["pipelineSpec"]["deploymentSpec"]["executors"].values():
        command = executor["container"]["command"]
        assert KUBEFLOW_ENTRYPOINT in command  # as compiled
        executor["container"]["command"] = [
            entrypoint if part == KUBEFLOW_ENTRYPOINT else part for part in command
        ]
    return job


def statistics_gen_in_kubeflows_shape(tmp_path, entrypoint: str) -> tuple:
    """StatisticsGen of the compiled kubeflow job, launched as the backend hands it its input
    (an upstream Examples artifact: an MLMD id for a name, no type) with `entrypoint` as its
    command's module. Returns (the launch, the error or None)."""
    environ = {**ENVIRONMENT, "MODEL_REGISTRY": "none"}
    job = with_entrypoint(
        compile_job(tmp_path, "imdb", environ=environ, target="kubeflow"), entrypoint
    )
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    launch = Launch(str(path), str(tmp_path / "out"))
    examples = launch.store.new_artifact(
        "tfx.Examples", EXAMPLES, str(tmp_path / "out" / "gs" / "bucket" / "examples")
    )
    write_examples(examples["uri"])
    launch.store.publish(examples["name"], {"split_names": '["train", "eval"]', "span": 0.0})
    launch.outputs["ReviewsExampleGen"] = {"examples": [examples]}
    import os

    os.makedirs(launch.log_dir, exist_ok=True)
    try:
        with launch.started(LocalRunner({}, str(tmp_path / "forkserver.log"), fresh=True)):
            launch.run_task("StatisticsGen", "[1/1] StatisticsGen")
        return launch, None
    except RuntimeError as error:
        return launch, error


def test_tfx_own_entrypoint_fails_on_the_backends_input_tfx_7768(tmp_path):
    _, error = statistics_gen_in_kubeflows_shape(tmp_path, TFX_ENTRYPOINT)
    assert error is not None
    assert "AttributeError: 'NoneType' object has no attribute 'get'" in str(error)


def data_steps_in_kfp_shape(tmp_path, entrypoint: str, release: str) -> tuple:
    """The compiled kubeflow job's ReviewsExampleGen then StatisticsGen, exactly as compiled
    (`entrypoint` as their command's module), each given the ExecutorInput a KFP `release`
    backend builds. Returns (the launch, the task that failed or None, its error)."""
    environ = {**ENVIRONMENT, "MODEL_REGISTRY": "none", "VERTEX_TRAINING": "0"}
    environ.update(BEAM_RUNNER="direct", TRAINER_ACCELERATOR_TYPE="")
    job = compile_job(tmp_path, "imdb", environ=environ, target="kubeflow")
    path = tmp_path / "job.json"
    path.write_text(json.dumps(with_entrypoint(job, entrypoint)))
    parameters = {"data_dir": str(TASKS["imdb"].default_data_dir)}
    launch = Launch(str(path), str(tmp_path / "out"), parameters, kfp_version=release)
    os.makedirs(launch.log_dir, exist_ok=True)
    with launch.started(LocalRunner({}, str(tmp_path / "forkserver.log"))):
        for name in ("ReviewsExampleGen", "StatisticsGen"):
            try:
                launch.run_task(name, f"[-] {name}")
            except RuntimeError as error:
                return launch, name, error
    return launch, None, None


def test_tfx_own_entrypoint_stops_at_the_executor_logs_output_of_kfp_2_5_on(tmp_path):
    _, failed, error = data_steps_in_kfp_shape(tmp_path, TFX_ENTRYPOINT, "2.17.0")
    assert failed == "ReviewsExampleGen"
    assert "Could not import system.Artifact" in str(error)


def test_the_compiled_data_steps_run_on_the_input_a_kfp_2_17_backend_builds(tmp_path):
    """Done when: the compiled ExampleGen and StatisticsGen run exactly as compiled with the
    ExecutorInput a KFP 2.17 backend hands them (executor-logs included, untyped inputs, named
    outputs) and succeed."""
    launch, failed, error = data_steps_in_kfp_shape(tmp_path, KUBEFLOW_ENTRYPOINT, "2.17.0")
    assert failed is None, error
    (statistics,) = launch.outputs["StatisticsGen"]["statistics"]
    assert statistics["state"] == "LIVE"
    for split in ("train", "eval"):
        assert tf.io.gfile.exists(f"{statistics['uri']}/Split-{split}/FeatureStats.pb")
    # The launcher wrote each task's log to its executor-logs output, beside the task's own.
    task_root = os.path.dirname(statistics["uri"])
    with open(os.path.join(task_root, "executor-logs")) as f:
        assert "Outputs the orchestrator added, left to it: ['executor-logs']" in f.read()
