"""The one JSON line a launch ends with, like `run`'s: its status, each task's state and time,
the metrics, the blessing, what was pushed and registered, the baseline, the training, the
report."""

import os
from typing import Dict


def summarize(launch, failed) -> dict:
    def metadata(task, key):
        listed = launch.outputs.get(task, {}).get(key, [])
        return listed[0].get("metadata", {}) if listed else None

    found: Dict[str, str] = {}  # output key -> the task that produced it
    for task, keys in launch.outputs.items():
        for key in keys:
            found.setdefault(key, task)
    pushed = metadata(found.get("pushed_model"), "pushed_model") or {}
    registered = metadata(found.get("registered_model"), "registered_model") or {}
    blessing = metadata(found.get("blessing"), "blessing") or {}
    evaluator = found.get("blessing", "")
    baseline = None
    for artifact in launch.inputs.get(evaluator, {}).get("baseline_model", [])[:1]:
        meta = artifact.get("metadata", {})
        if meta.get("champion_found", 1):
            baseline = {
                "artifact": artifact["name"],
                "uri": artifact["uri"],
                "version": meta.get("champion_version"),
                "source": meta.get("champion_source"),
            }
    evaluation = launch.outputs.get(found.get("evaluation", ""), {}).get("evaluation", [])
    metrics = {}
    if evaluation and os.path.exists(evaluation[0]["uri"]):
        metrics = quietly(overall_metrics_of, evaluation[0]["uri"])
    report = metadata(found.get("report"), "report") or {}
    model_run = launch.outputs.get(found.get("model_run", ""), {}).get("model_run", [])
    training = None
    if model_run:
        from pipeline.run_summary import training_length

        training = training_length(model_run[0]["uri"])
    return {
        "status": "failed" if failed else "succeeded",
        **({"error": f"task {failed[0]}: {failed[1]}"} if failed else {}),
        "pipeline_name": launch.job.pipeline_name,
        "job": launch.job.job_name,
        "target": launch.job.target,
        "tasks": launch.states,
        "blessed": bool(blessing.get("blessed")) if blessing else None,
        "metrics": metrics,
        "pushed_model": pushed.get("pushed_destination") if pushed.get("pushed") else None,
        "pushed_version": pushed.get("pushed_version") if pushed.get("pushed") else None,
        "registered": (
            {k: registered.get(k) for k in ("registry", "name", "version", "alias", "uri")}
            if registered.get("registered")
            else None
        ),
        "baseline_model": baseline,
        "training": training,
        "report": report.get("report_path"),
        "notes": launch.notes,
        "logs": launch.log_dir,
    }


def overall_metrics_of(evaluation_uri: str) -> dict:
    from components.evaluation_results import overall_metrics

    return overall_metrics(evaluation_uri)


def quietly(function, *args):
    """function(*args) with TensorFlow's Python warnings (deprecation notices inside TFMA's
    readers) kept off the console."""
    import logging

    logger = logging.getLogger("tensorflow")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return function(*args)
    finally:
        logger.setLevel(level)
