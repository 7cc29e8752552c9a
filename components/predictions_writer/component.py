"""PredictionsWriter: BulkInferrer's PredictionLogs -> JSON lines, one answer per input."""

from tfx import types
from tfx.dsl.components.base import base_beam_component, executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter, ExecutionParameter

from components.artifact_types import Predictions
from components.predictions_writer import executor


class PredictionsWriterSpec(types.ComponentSpec):
    PARAMETERS = {"feature": ExecutionParameter(type=str)}
    INPUTS = {"inference_result": ChannelParameter(type=standard_artifacts.InferenceResult)}
    OUTPUTS = {"predictions": ChannelParameter(type=Predictions)}


class PredictionsWriter(base_beam_component.BaseBeamComponent):
    """Writes each PredictionLog of `inference_result` as a JSON line: the input's `id`, its
    raw `feature` (texts; not image bytes) and the answer `tfx-transformers predict` gives
    (trainer_module/serving/contract.py: answer)."""

    SPEC_CLASS = PredictionsWriterSpec
    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, inference_result: types.BaseChannel, feature: str):
        super().__init__(
            spec=PredictionsWriterSpec(
                inference_result=inference_result,
                feature=feature,
                predictions=types.Channel(type=Predictions),
            )
        )
