"""What a pipeline run did, read back from MLMD: per-component state and time, metrics, push."""

import json
import os
from typing import Any, Dict, List, Optional

import ml_metadata as mlmd
from ml_metadata.proto import metadata_store_pb2
from tfx.dsl.io import fileio

from components import file_io
from components.cost_estimate.estimate import ESTIMATE_PROPERTY
from components.dataset_example_gen import WINDOW
from components.evaluation_results import blessing_failures, overall_metrics
from components.run_report.executor import REPORT_PATH
from pipeline import configs

_STATES = metadata_store_pb2.Execution.State
# Recorded on the ExampleGen's Examples: the layout found, the span and version TFX's driver
# resolved (span 0 for a folder without {SPAN}), with --spans the spans of the training
# window, the pairs read and skipped (translation).
DATA_PROPERTIES = ("data_layout", "span", "version", "spans", "pairs", "skipped_empty_pairs")


def node_id(store: mlmd.MetadataStore, execution_id: int, pipeline_name: str) -> str:
    for context in store.get_contexts_by_execution(execution_id):
        if context.name.startswith(pipeline_name + "."):
            return context.name[len(pipeline_name) + 1 :]
    return f"execution-{execution_id}"


def pipeline_runs(
    store: mlmd.MetadataStore, pipeline_name: str
) -> List[metadata_store_pb2.Context]:
    """The pipeline's run contexts, oldest first."""
    pipeline = store.get_context_by_type_and_name("pipeline", pipeline_name)
    if pipeline is None:
        return []
    ours = {e.id for e in store.get_executions_by_context(pipeline.id)}
    runs = [
        c
        for c in store.get_contexts_by_type("pipeline_run")
        if any(e.id in ours for e in store.get_executions_by_context(c.id))
    ]
    return sorted(runs, key=lambda c: (c.create_time_since_epoch, c.id))


def latest_run(
    store: mlmd.MetadataStore, pipeline_name: str
) -> Optional[metadata_store_pb2.Context]:
    runs = pipeline_runs(store, pipeline_name)
    return runs[-1] if runs else None


def run_status(summary: dict) -> str:
    """failed (a component failed); planned (a dry run: every component of the data's half ran,
    and no Transform); succeeded (every component ran or was cached); else incomplete
    (running, or stopped before its last component)."""
    states = {c["state"] for c in summary["components"].values()}
    if "failed" in states:
        return "failed"
    if not states or not states <= {"complete", "cached"}:
        return "incomplete"
    return "succeeded" if "Transform" in summary["components"] else "planned"


def outputs(store: mlmd.MetadataStore, execution_id: int) -> dict:
    """Output key -> artifacts of one execution."""
    events = [
        e
        for e in store.get_events_by_execution_ids([execution_id])
        if e.type in (metadata_store_pb2.Event.OUTPUT, metadata_store_pb2.Event.DECLARED_OUTPUT)
    ]
    artifacts = {a.id: a for a in store.get_artifacts_by_id([e.artifact_id for e in events])}
    outputs: Dict[str, list] = {}
    for event in events:
        key = event.path.steps[0].key if event.path.steps else ""
        outputs.setdefault(key, []).append(artifacts[event.artifact_id])
    return outputs


def _property(artifact, name):
    value = artifact.custom_properties.get(name)
    if value is None:
        return None
    return getattr(value, value.WhichOneof("value"))


def summarize(metadata: str, pipeline_name: str, run_id: Optional[str] = None) -> dict:
    """The summary of the run `run_id` (default: the newest) of `pipeline_name` recorded in
    the MLMD store `metadata` (a SQLite file or a mysql:// URI: configs.metadata_connection)."""
    store = mlmd.MetadataStore(configs.metadata_connection(metadata))
    run = (
        store.get_context_by_type_and_name("pipeline_run", run_id)
        if run_id
        else latest_run(store, pipeline_name)
    )
    summary: Dict[str, Any] = {
        "pipeline_name": pipeline_name,
        "run_id": run.name if run else None,
        "pushed_model": None,
        "pushed_version": None,
        "blessed": None,
        "metrics": {},
        "components": {},
        "registered": None,
        "report": None,
    }
    if run is None:
        return summary
    executions = sorted(store.get_executions_by_context(run.id), key=lambda e: e.id)
    for execution in executions:
        node = node_id(store, execution.id, pipeline_name)
        seconds = (
            execution.last_update_time_since_epoch - execution.create_time_since_epoch
        ) / 1000
        summary["components"][node] = {
            "state": _STATES.Name(execution.last_known_state).lower(),
            "seconds": round(seconds, 2),
        }
        produced = outputs(store, execution.id)
        for artifact in produced.get("evaluation", []):
            summary["metrics"] = overall_metrics(artifact.uri)
            summary["blessing_failures"] = blessing_failures(artifact.uri)
        for artifact in produced.get("examples", []):
            # What the ExampleGen read and skipped (ParallelCorpusExampleGen records both);
            # with --spans, what the training window's ExampleGen read, under "window".
            data = summary.setdefault("data", {})
            if node.endswith(WINDOW):
                data = data.setdefault("window", {})
            for name in DATA_PROPERTIES:
                value = _property(artifact, name)
                if value is not None:
                    data[name] = value

        for artifact in produced.get("blessing", []):
            summary["blessed"] = bool(_property(artifact, "blessed"))
        for artifact in produced.get("pushed_model", []):
            if _property(artifact, "pushed"):
                summary["pushed_model"] = _property(artifact, "pushed_destination")
                summary["pushed_version"] = _property(artifact, "pushed_version")
        for artifact in produced.get("registered_model", []):
            if _property(artifact, "registered"):
                summary["registered"] = {
                    name: _property(artifact, name)
                    for name in ("registry", "name", "version", "alias", "uri")
                }
        for artifact in produced.get("model_run", []):
            summary["training"] = training_length(artifact.uri)
        for artifact in produced.get("report", []):
            summary["report"] = _property(artifact, REPORT_PATH)
        for artifact in produced.get("cost", []):  # CostEstimate's, before Transform
            summary["cost"] = json.loads(_property(artifact, ESTIMATE_PROPERTY) or "null")
    return summary


def training_length(model_run_uri: str) -> Optional[dict]:
    """Steps, epochs and training examples from the Trainer's history.json (None without)."""
    path = os.path.join(model_run_uri, "history.json")  # trainer_module.training.history
    if not fileio.exists(path):  # fileio: a gs:// pipeline root too
        return None
    with fileio.open(path) as f:
        history = json.load(f)
    return {
        key: history.get(key)
        for key in ("train_steps", "epochs", "train_examples", "resumed_from_step", "warm_start")
    }


def summarize_inference(metadata: str, pipeline_name: str) -> dict:
    """The newest run's bulk inference: the model it used (and the version pushed from it),
    the inputs scored, the JSON lines files and the skew check's findings (None: no check or
    nothing to compare with; []: within every threshold) (pipeline/factory.py:
    create_inference_pipeline)."""
    from components.predictions_writer.executor import COUNT_PROPERTY, FILE_PREFIX
    from components.resolvers import lineage

    store = mlmd.MetadataStore(configs.metadata_connection(metadata))
    run = latest_run(store, pipeline_name)
    summary: Dict[str, Any] = {
        "pipeline_name": pipeline_name,
        "run_id": run.name if run else None,
        "model": None,
        "model_version": None,
        "predictions": None,
        "prediction_files": [],
        "prediction_logs": None,
        "skew": None,
        "components": {},
    }
    for execution in sorted(
        store.get_executions_by_context(run.id) if run else [], key=lambda e: e.id
    ):
        node = node_id(store, execution.id, pipeline_name)
        summary["components"][node] = _STATES.Name(execution.last_known_state).lower()
        produced = outputs(store, execution.id)
        for artifact in produced.get("inference_result", []):
            summary["prediction_logs"] = artifact.uri
            for model_id in lineage.inputs(store, execution.id, "model"):
                summary["model"] = store.get_artifacts_by_id([model_id])[0].uri
                summary["model_version"] = _pushed_version(store, model_id)
        if node == "SkewValidator":
            from components.anomalies_gate.component import describe_anomalies

            for artifact in produced.get("anomalies", []):
                pairs = file_io.glob(os.path.join(artifact.uri, "SplitPair-*"))
                summary["skew"] = (
                    describe_anomalies(
                        artifact.uri, [os.path.basename(p)[len("SplitPair-") :] for p in pairs]
                    )
                    if pairs
                    else None
                )
        for artifact in produced.get("predictions", []):
            summary["predictions"] = _property(artifact, COUNT_PROPERTY)
            summary["prediction_files"] = sorted(
                file_io.glob(os.path.join(artifact.uri, FILE_PREFIX + "*"))
            )
    return summary


def _pushed_version(store: mlmd.MetadataStore, model_id: int) -> Optional[str]:
    """The version folder the Pusher copied the model to, if it pushed it."""
    from components.resolvers import lineage

    for execution in lineage.executions(store, model_id, lineage.INPUT):
        for artifact in outputs(store, execution).get("pushed_model", []):
            if _property(artifact, "pushed"):
                return _property(artifact, "pushed_version")
    return None
