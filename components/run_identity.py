"""Which pipeline and run an executor works for."""

from typing import Any, Mapping, Tuple


def run_identity(context, exec_properties: Mapping[str, Any]) -> Tuple[str, str]:
    """(pipeline name, run id): the executor's parameters `pipeline_name` and `run_id` when
    set (compiled jobs: TFX's Kubeflow v2 entrypoint gives executors no pipeline context),
    else the context's (LocalDagRunner); "" for what neither knows."""
    pipeline_name = exec_properties.get("pipeline_name") or (
        context.pipeline_info.id if context and context.pipeline_info else ""
    )
    run_id = exec_properties.get("run_id") or (context.pipeline_run_id if context else "") or ""
    return pipeline_name, run_id
