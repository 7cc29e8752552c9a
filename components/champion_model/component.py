"""ChampionModel: the Evaluator's baseline in compiled jobs, read from the model registry.

A compiled job cannot use TFX's latest-blessed-model resolver: the open-source Kubeflow
Pipelines 2 backend refuses resolver tasks, and on Vertex AI the compiled filter
(`schema_title="tfx.ModelBlessing" AND metadata.blessed.number_value=1`) spans the project's
whole metadata store, so one pipeline would compare with another pipeline's model. This
component asks the registry instead, by the pipeline's model name, which also makes the
registry the source of truth: a `registry promote` (or a rollback) changes the baseline of the
next run. Without a registry, the champion is the newest version the Pusher published (only
blessed models are published).
"""

from tfx import types
from tfx.components import Evaluator
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter, ExecutionParameter

from components.champion_model import evaluator, executor


class ChampionModelSpec(types.ComponentSpec):
    PARAMETERS = {
        "model_name": ExecutionParameter(type=str),  # the registered model: the pipeline's name
        "registry": ExecutionParameter(type=str, optional=True),  # backends.py JSON, or none
        "serving_model_dir": ExecutionParameter(type=str),  # the Pusher's base directory
    }
    INPUTS = {}
    OUTPUTS = {"model": ChannelParameter(type=standard_artifacts.Model)}


class ChampionModel(base_component.BaseComponent):
    """Copies the champion's SavedModel into a Model artifact (Format-Serving, as the Trainer
    writes it), or, with no champion yet, writes an empty one marked `champion_found = 0`,
    which ChampionAwareEvaluator treats as no baseline. Never cache it: its inputs are
    constants, its answer is not."""

    SPEC_CLASS = ChampionModelSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(executor.Executor)

    def __init__(self, *, model_name: str, serving_model_dir: str, registry: str = ""):
        super().__init__(
            spec=ChampionModelSpec(
                model_name=model_name,
                registry=registry or None,
                serving_model_dir=serving_model_dir,
                model=types.Channel(type=standard_artifacts.Model),
            )
        )


class ChampionAwareEvaluator(Evaluator):
    """TFX's Evaluator, less a baseline that ChampionModel found empty (no model blessed yet):
    then the candidate is judged by the value thresholds alone, as with an empty resolver."""

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(evaluator.Executor)
