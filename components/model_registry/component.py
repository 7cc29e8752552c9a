"""ModelRegistry component: after the Pusher, registers the pushed model version."""

from tfx import types
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter, ExecutionParameter

from components.model_registry.executor import Executor


class RegisteredModel(types.Artifact):
    """Where the model was registered: custom properties registry, name, version, uri, alias
    (`registered` = 0 when nothing was: the model was not pushed)."""

    # "<namespace>.<Name>": the form Kubeflow v2 pipeline specs require of custom types.
    TYPE_NAME = "tfx_transformers.RegisteredModel"


class ModelRegistrySpec(types.ComponentSpec):
    PARAMETERS = {"registry": ExecutionParameter(type=str)}  # JSON, see backends.py
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

    def __init__(self, *, registry: str, **inputs: types.BaseChannel):
        super().__init__(
            spec=ModelRegistrySpec(
                registry=registry, registered_model=types.Channel(type=RegisteredModel), **inputs
            )
        )
