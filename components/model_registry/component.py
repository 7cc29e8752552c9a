"""ModelRegistry component: after the Pusher, registers the pushed model version."""

from typing import Optional

from tfx import types
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter, ExecutionParameter

from components.artifact_types import RegisteredModel
from components.model_registry.executor import Executor


class ModelRegistrySpec(types.ComponentSpec):
    PARAMETERS = {
        "registry": ExecutionParameter(type=str),  # JSON, see backends.py
        # Where the orchestrator gives executors no pipeline context (compiled jobs): the
        # registered model's name and the run's id (default: the context's).
        "pipeline_name": ExecutionParameter(type=str, optional=True),
        "run_id": ExecutionParameter(type=str, optional=True),
    }
    INPUTS = {
        "pushed_model": ChannelParameter(type=standard_artifacts.PushedModel),
        "model": ChannelParameter(type=standard_artifacts.Model),
        "blessing": ChannelParameter(type=standard_artifacts.ModelBlessing),
        "evaluation": ChannelParameter(type=standard_artifacts.ModelEvaluation),
        "examples": ChannelParameter(type=standard_artifacts.Examples),
        "transform_graph": ChannelParameter(type=standard_artifacts.TransformGraph),
    }
    OUTPUTS = {"registered_model": ChannelParameter(type=RegisteredModel)}


class ModelRegistry(base_component.BaseComponent):
    """Registers each pushed version with its metrics, blessing and lineage; moves the
    champion alias to blessed versions (backends.py: MLflow or Vertex AI)."""

    SPEC_CLASS = ModelRegistrySpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)

    def __init__(
        self,
        *,
        registry: str,
        pipeline_name: Optional[str] = None,
        run_id: Optional[str] = None,
        **inputs: types.BaseChannel,
    ):
        super().__init__(
            spec=ModelRegistrySpec(
                registry=registry,
                pipeline_name=pipeline_name,
                run_id=run_id,
                registered_model=types.Channel(type=RegisteredModel),
                **inputs,
            )
        )
