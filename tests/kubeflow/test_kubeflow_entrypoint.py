"""The Kubeflow target's entrypoint (pipeline/kubeflow_entrypoint.py) against the ExecutorInput
a Kubeflow Pipelines 2 backend builds (launch's KubeflowShape): TFX 1.16's own entrypoint fails
on it (tensorflow/tfx#7768), the project's fills the input types in and the step runs."""

import json

import pytest
import tensorflow as tf

from pipeline.kubeflow_entrypoint import fill_input_types, fixed_arguments
from pipeline.kubeflow_runner import KUBEFLOW_ENTRYPOINT, TFX_ENTRYPOINT
from pipeline.launch.launcher import Launch
from pipeline.launch.runners import LocalRunner
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


def statistics_gen_in_kubeflows_shape(tmp_path, entrypoint: str) -> tuple:
    """StatisticsGen of the compiled kubeflow job, launched as the backend hands it its input
    (an upstream Examples artifact: an MLMD id for a name, no type) with `entrypoint` as its
    command's module. Returns (the launch, the error or None)."""
    environ = {**ENVIRONMENT, "MODEL_REGISTRY": "none"}
    job = compile_job(tmp_path, "imdb", environ=environ, target="kubeflow")
    for executor in job["pipelineSpec"]["deploymentSpec"]["executors"].values():
        command = executor["container"]["command"]
        assert KUBEFLOW_ENTRYPOINT in command  # as compiled
        executor["container"]["command"] = [
            entrypoint if part == KUBEFLOW_ENTRYPOINT else part for part in command
        ]
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


def test_the_kubeflow_entrypoint_runs_the_step_on_the_same_input(tmp_path):
    launch, error = statistics_gen_in_kubeflows_shape(tmp_path, KUBEFLOW_ENTRYPOINT)
    assert error is None
    (statistics,) = launch.outputs["StatisticsGen"]["statistics"]
    assert statistics["state"] == "LIVE"
    for split in ("train", "eval"):
        assert tf.io.gfile.exists(f"{statistics['uri']}/Split-{split}/FeatureStats.pb")
    # Its output, named by its key as the backend names it, under the run's own folder.
    assert "/imdb-text-encoder/imdb-text-encoder/" in statistics["uri"]
