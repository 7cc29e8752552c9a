"""The ModelRegistry executor: registers what the Pusher pushed, nothing otherwise."""

from tfx.dsl.components.base import base_executor
from tfx.proto.orchestration import pipeline_pb2
from tfx.types import standard_artifacts

from components.model_registry.backends import from_config, mlflow_config
from components.model_registry.component import RegisteredModel
from components.model_registry.executor import Executor
from components.model_registry.version import saved_model_fingerprint
from tests.registry.toy_model import write_toy_model
from tests.report.fixtures import write_evaluation


def artifact(artifact_class, artifact_id, **properties):
    value = artifact_class()
    value.id = artifact_id
    for name, item in properties.items():
        (
            value.set_int_custom_property
            if isinstance(item, int)
            else value.set_string_custom_property
        )(name, item)
    return value


def run(tmp_path, pushed: bool):
    config = mlflow_config(str(tmp_path / "mlflow"), tracking_uri=None)
    push = (
        {
            "pushed": 1,
            "pushed_destination": write_toy_model(tmp_path / "serving" / "1795000000"),
            "pushed_version": "1795000000",
        }
        if pushed
        else {"pushed": 0}
    )
    inputs = {
        "pushed_model": [artifact(standard_artifacts.PushedModel, 17, **push)],
        "model": [artifact(standard_artifacts.Model, 13)],
        "blessing": [artifact(standard_artifacts.ModelBlessing, 15, blessed=int(pushed))],
        "evaluation": [write_evaluation(tmp_path / "evaluation", blessed=pushed)],
        "examples": [artifact(standard_artifacts.Examples, 1)],
        "transform_graph": [artifact(standard_artifacts.TransformGraph, 7)],
    }
    output = RegisteredModel()
    context = base_executor.BaseExecutor.Context(
        pipeline_info=pipeline_pb2.PipelineInfo(id="imdb-text-encoder"), pipeline_run_id="run-9"
    )
    Executor(context=context).Do(inputs, {"registered_model": [output]}, {"registry": config})
    return output, from_config(config)


def test_a_pushed_model_is_registered_with_its_metrics_and_lineage(tmp_path):
    output, registry = run(tmp_path, pushed=True)
    assert output.get_int_custom_property("registered") == 1
    assert output.get_string_custom_property("version") == "1"
    assert output.get_string_custom_property("alias") == "champion"
    shown = registry.by_alias("imdb-text-encoder", "champion")
    assert shown["saved_model"] == str(tmp_path / "serving" / "1795000000")
    assert shown["tags"]["saved_model_fingerprint"] == saved_model_fingerprint(shown["saved_model"])
    assert shown["metrics"] == {"binary_accuracy": 0.75, "example_count": 2.0}
    assert shown["tags"]["pipeline_run_id"] == "run-9"
    assert [
        shown["tags"][f"mlmd_{k}_id"]
        for k in ("examples", "transform_graph", "model", "evaluation", "blessing", "pushed_model")
    ] == ["1", "7", "13", "16", "15", "17"]


def test_a_model_that_was_not_pushed_is_not_registered(tmp_path):
    output, registry = run(tmp_path, pushed=False)
    assert output.get_int_custom_property("registered") == 0
    assert registry.versions() == []
