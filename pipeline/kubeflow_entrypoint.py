"""The Kubeflow target's container entrypoint: TFX's KFP v2 entrypoint, with its input types
filled in first (tensorflow/tfx#7768).

An open-source Kubeflow Pipelines 2 backend hands a step its upstream artifacts with an empty
type: its driver reads them back from ML Metadata, which keeps no schema
(`GetOutputArtifactsByExecutionId` in kubeflow/pipelines' `backend/src/v2/metadata/client.go`
builds them with `Schema: ""`). TFX 1.16's entrypoint takes each input's class from that type
(`yaml.safe_load(instance_schema).get("title")` in
`tfx/orchestration/kubeflow/v2/container/kubeflow_v2_entrypoint_utils.py`), so every step with
an input fails with "'NoneType' object has no attribute 'get'". Vertex AI sends the type, and
needs none of this.

The compiled command carries the component's own input definitions
(`--json_serialized_inputs_spec_args`, each input's `artifactType`): this module copies each
input's type from there into the ExecutorInput where the orchestrator left it empty, then runs
TFX's entrypoint (`kubeflow_v2_run_executor`) unchanged, with the same arguments.

    python -m pipeline.kubeflow_entrypoint --executor_class_path ... \
        --json_serialized_invocation_args '{{$}}' --json_serialized_inputs_spec_args '{...}'
"""

import json
import sys
from typing import List

INVOCATION = "--json_serialized_invocation_args"
INPUTS_SPEC = "--json_serialized_inputs_spec_args"


def fill_input_types(executor_input: dict, inputs_spec: dict) -> dict:
    """`executor_input` (ExecutorInput, JSON) with each input artifact's type taken from
    `inputs_spec` (ComponentInputsSpec, JSON) where the orchestrator sent none."""
    declared = inputs_spec.get("artifacts", {})
    for key, listed in executor_input.get("inputs", {}).get("artifacts", {}).items():
        artifact_type = declared.get(key, {}).get("artifactType")
        if not artifact_type:
            continue
        for artifact in listed.get("artifacts", []):
            given = artifact.get("type") or {}
            if not (given.get("instanceSchema") or given.get("schemaTitle")):
                artifact["type"] = dict(artifact_type)
    return executor_input


def value_of(argv: List[str], flag: str) -> "int | None":
    """The index of `flag`'s value in `argv` (as `--flag VALUE` or `--flag=VALUE`), or None."""
    for at, part in enumerate(argv):
        if part == flag and at + 1 < len(argv):
            return at + 1
        if part.startswith(flag + "="):
            return at
    return None


def fixed_arguments(argv: List[str]) -> List[str]:
    """`argv` with the ExecutorInput's input types filled (fill_input_types)."""
    invocation, spec = value_of(argv, INVOCATION), value_of(argv, INPUTS_SPEC)
    if invocation is None or spec is None:
        return argv

    def read(at: int, flag: str) -> str:
        return argv[at][len(flag) + 1 :] if argv[at].startswith(flag + "=") else argv[at]

    executor_input = json.loads(read(invocation, INVOCATION))
    filled = fill_input_types(executor_input, json.loads(read(spec, INPUTS_SPEC)))
    argv = list(argv)
    text = json.dumps(filled)
    argv[invocation] = f"{INVOCATION}={text}" if argv[invocation].startswith(INVOCATION) else text
    return argv


def main() -> None:
    from absl import app
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_run_executor as tfx_entrypoint

    sys.argv = fixed_arguments(sys.argv)
    app.run(tfx_entrypoint.main, flags_parser=tfx_entrypoint._parse_flags)


if __name__ == "__main__":
    main()
