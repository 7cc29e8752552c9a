"""RunReport component: the last node of the pipeline; writes one HTML page per run."""

from typing import Optional

from tfx import types
from tfx.dsl.components.base import base_component, executor_spec
from tfx.types import standard_artifacts
from tfx.types.component_spec import ChannelParameter, ExecutionParameter

from components.artifact_types import RegisteredModel
from components.artifact_types import RunReport as RunReportArtifact
from components.run_report.executor import Executor

# Input key -> artifact type; the factory wires each to the producing component's output.
INPUTS = {
    "examples": standard_artifacts.Examples,
    "training_examples": standard_artifacts.Examples,  # with --spans: the training window
    "statistics": standard_artifacts.ExampleStatistics,
    "schema": standard_artifacts.Schema,
    "anomalies": standard_artifacts.ExampleAnomalies,
    "drift": standard_artifacts.ExampleAnomalies,  # DistributionValidator's
    "transform_graph": standard_artifacts.TransformGraph,
    "model": standard_artifacts.Model,
    "model_run": standard_artifacts.ModelRun,
    "evaluation": standard_artifacts.ModelEvaluation,
    "blessing": standard_artifacts.ModelBlessing,
    "pushed_model": standard_artifacts.PushedModel,
    "baseline_model": standard_artifacts.Model,
    "registered_model": RegisteredModel,
}
# The baseline is absent until some model has been blessed; the registry, the drift check and
# a training window are optional.
OPTIONAL_INPUTS = {"baseline_model", "registered_model", "drift", "training_examples"}


class RunReportSpec(types.ComponentSpec):
    PARAMETERS = {
        # JSON: task, model, preset, description, intended_use, limitations, gating_metric.
        "model_card": ExecutionParameter(type=str),
        # Where the orchestrator gives executors no pipeline context (compiled jobs).
        "pipeline_name": ExecutionParameter(type=str, optional=True),
        "run_id": ExecutionParameter(type=str, optional=True),
    }
    INPUTS = {
        key: ChannelParameter(type=artifact_type, optional=key in OPTIONAL_INPUTS)
        for key, artifact_type in INPUTS.items()
    }
    OUTPUTS = {"report": ChannelParameter(type=RunReportArtifact)}


class RunReport(base_component.BaseComponent):
    """Model card, TFMA metrics and slices, blessing and thresholds, training curves,
    attention heatmaps, data statistics and anomalies, and lineage, on one static page."""

    SPEC_CLASS = RunReportSpec
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(Executor)

    def __init__(
        self,
        *,
        model_card: str,
        pipeline_name: Optional[str] = None,
        run_id: Optional[str] = None,
        **inputs: types.BaseChannel,
    ):
        super().__init__(
            spec=RunReportSpec(
                model_card=model_card,
                pipeline_name=pipeline_name,
                run_id=run_id,
                report=types.Channel(type=RunReportArtifact),
                **inputs,
            )
        )
