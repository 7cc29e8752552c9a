"""Run reports in an output directory: find the latest one, or rebuild one from MLMD."""

import glob
import json
import os
import re
from typing import Dict, Optional

import ml_metadata as mlmd
from tfx.orchestration import metadata

from components.dataset_example_gen import SOURCE_PROPERTY
from components.run_report.artifacts import ArtifactRef, from_mlmd
from components.run_report.component import INPUTS, RunReportArtifact
from components.run_report.executor import REPORT_PATH
from components.run_report.report import REPORT_FILE, write_report
from pipeline import configs, run_summary
from pipeline.tasks import get_task

RESOLVER_NODE = "latest_blessed_model_resolver"  # its `model` output is the baseline
REPORTS_DIR = "reports"  # <output>/reports/<pipeline>/<run id>.html: regenerated reports


def open_store(metadata_path: str) -> mlmd.MetadataStore:
    return mlmd.MetadataStore(metadata.sqlite_metadata_connection_config(metadata_path))


def pipeline_names(output_dir: str) -> list:
    pattern = os.path.join(os.path.abspath(output_dir), "metadata", "*", "metadata.sqlite")
    return sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(pattern))


def report_path(artifact) -> str:
    value = artifact.custom_properties.get(REPORT_PATH)
    return value.string_value if value is not None else os.path.join(artifact.uri, REPORT_FILE)


def latest_report(output_dir: str, pipeline_name: Optional[str] = None) -> Optional[str]:
    """The newest report page a run wrote under `output_dir` (of `pipeline_name`, if given)."""
    newest = None
    for name in [pipeline_name] if pipeline_name else pipeline_names(output_dir):
        path = configs.output_paths(output_dir, name)["metadata_path"]
        if not os.path.exists(path):
            continue
        for artifact in open_store(path).get_artifacts_by_type(RunReportArtifact.TYPE_NAME):
            if newest is None or (artifact.create_time_since_epoch, artifact.id) > newest[0]:
                newest = ((artifact.create_time_since_epoch, artifact.id), report_path(artifact))
    return newest[1] if newest else None


def run_artifacts(
    store: mlmd.MetadataStore, run_context, pipeline_name: str
) -> Dict[str, ArtifactRef]:
    """role -> ArtifactRef for the artifacts the run's components produced or reused."""
    types = {t.id: t.name for t in store.get_artifact_types()}
    refs = {}
    for execution in store.get_executions_by_context(run_context.id):
        node = run_summary.node_id(store, execution.id, pipeline_name)
        for key, artifacts in run_summary.outputs(store, execution.id).items():
            role = "baseline_model" if node == RESOLVER_NODE and key == "model" else key
            if role in INPUTS and artifacts:
                refs[role] = from_mlmd(role, artifacts[-1], types[artifacts[-1].type_id])
    return refs


def _exec_property(store, run_context, name: str) -> Optional[dict]:
    """The JSON exec property `name` of the run's execution that has one, else None."""
    for execution in store.get_executions_by_context(run_context.id):
        value = execution.custom_properties.get(name)
        if value is not None and value.string_value:
            return json.loads(value.string_value)
    return None


def _trainer_config(store, run_context) -> dict:
    for execution in store.get_executions_by_context(run_context.id):
        value = execution.custom_properties.get("custom_config")
        config = (
            json.loads(value.string_value) if value is not None and value.string_value else None
        )
        if isinstance(config, dict) and "task" in config:  # the Trainer's
            return config
    return {}


def regenerate(
    output_dir: str, pipeline_name: Optional[str] = None, run_id: Optional[str] = None
) -> str:
    """Rebuilds the report of run `run_id` (default: the newest) from MLMD into
    <output>/reports/<pipeline>/<run id>.html; returns the path. `pipeline_name` may be left
    out when the output directory holds one pipeline."""
    if pipeline_name is None:
        names = pipeline_names(output_dir)
        if len(names) != 1:
            raise ValueError(
                f"name the pipeline (--pipeline); {output_dir} holds {', '.join(names) or 'none'}"
            )
        pipeline_name = names[0]
    metadata_path = configs.output_paths(output_dir, pipeline_name)["metadata_path"]
    if not os.path.exists(metadata_path):
        raise FileNotFoundError(
            f"no pipeline {pipeline_name!r} under {output_dir} "
            f"(known: {', '.join(pipeline_names(output_dir)) or 'none'})"
        )
    store = open_store(metadata_path)
    if run_id:
        run = store.get_context_by_type_and_name("pipeline_run", run_id)
        if run is None:
            raise ValueError(f"pipeline {pipeline_name!r} has no run {run_id!r}")
    else:
        run = run_summary.latest_run(store, pipeline_name)
        if run is None:
            raise ValueError(f"pipeline {pipeline_name!r} has no recorded run")
    refs = run_artifacts(store, run, pipeline_name)
    card = _exec_property(store, run, "model_card")  # the card the run's report was given
    if card is None:  # a run that stopped before its report
        config = _trainer_config(store, run)
        task = get_task(config.get("task") or pipeline_name.split("-")[0])
        examples = refs.get("examples")
        card = task.model_card(
            config.get("model") or task.default_model,
            config.get("preset"),
            examples.get(SOURCE_PROPERTY) if examples else None,
        )
    safe_run = re.sub(r"[^0-9A-Za-z_.-]", "_", run.name)
    path = os.path.join(os.path.abspath(output_dir), REPORTS_DIR, pipeline_name, f"{safe_run}.html")
    return write_report(
        path,
        refs,
        pipeline_name=pipeline_name,
        run_id=run.name,
        card=card,
    )
