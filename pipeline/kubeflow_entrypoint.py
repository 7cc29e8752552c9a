"""The Kubeflow target's container entrypoint: TFX's KFP v2 entrypoint, run on the ExecutorInput
every Kubeflow Pipelines 2 backend from 2.0 on hands a step, made into the one TFX reads.

TFX 1.16's entrypoint (`kubeflow_v2_run_executor`, unchanged in 1.21) was written for Vertex AI.
What an open-source backend sends differently, and what this module does about each before it
runs TFX's entrypoint unchanged, with the same arguments:

- **Inputs without a type.** The driver reads upstream artifacts back from ML Metadata, which
  keeps no schema (`GetOutputArtifactsByExecutionId` in `backend/src/v2/metadata/client.go`
  builds them with `Schema: ""`); TFX takes each input's class from that type
  (tensorflow/tfx#7768). Each input's type is copied from the component's own input
  definitions, which the compiled command carries (`--json_serialized_inputs_spec_args`).
- **Outputs the component does not declare.** From 2.5 the driver adds `executor-logs`, typed
  `system.Artifact`, to every task (`provisionOutputs`, under `publish_logs`), and TFX imports
  every output's type: `ImportError: Could not import system.Artifact`. Outputs not among those
  the compiled command declares (`--declared_outputs_args`, which the kubeflow target adds) are
  set aside before TFX parses them and left to the launcher that added them.
- **Job placeholders left as compiled.** Before 2.5 the driver fills in no placeholder, so the
  steps get `{{$.pipeline_job_name}}` itself as the run id. A parameter that is exactly a job
  placeholder gets the run's id instead, read from the outputs' URIs
  (`<root>/<pipeline>/<run id>/<task>[/<salt>]/<key>`, `provisionOutputs`).
- **Folder markers its launcher cannot download.** The next step's launcher downloads each of
  its inputs into the pod, joining object keys as paths (`DownloadBlob`): a zero-byte `dir/`
  object, which TensorFlow's GCS file system writes for every folder it makes, becomes a
  file, and the next object under that folder cannot be written: the next step fails before
  it starts (kubeflow/pipelines#13476). Once TFX has run, the markers of folders that hold
  objects are removed from the step's outputs; those of empty folders stay (a folder with
  nothing else in it exists on GCS only as its marker, and downloads as a harmless file).
- **One executor output file for every task.** Before 2.15 it is
  `/tmp/kfp_outputs/output_metadata.json`, from which TFX takes the task root and unique id
  ("kfp_outputs" for every task). TFX is given the task's own folder on the pod's disk
  instead, as 2.15 gives it (`/gcs/<task root>/output_metadata.json`), and what it writes there
  is copied to the file the launcher reads.

    python -m pipeline.kubeflow_entrypoint --executor_class_path ... \\
        --json_serialized_invocation_args '{{$}}' --json_serialized_inputs_spec_args '{...}' \\
        --declared_outputs_args '["statistics"]'
"""

import json
import os
import re
import shutil
import sys
from typing import List, Optional

INVOCATION = "--json_serialized_invocation_args"
INPUTS_SPEC = "--json_serialized_inputs_spec_args"
# The kubeflow target's own argument: the output keys the component declares.
DECLARED_OUTPUTS = "--declared_outputs_args"
# The executor output file of every task before Kubeflow Pipelines 2.15.
LEGACY_OUTPUT_FILE = "/tmp/kfp_outputs/output_metadata.json"
JOB_PLACEHOLDERS = (
    "{{$.pipeline_job_name}}",
    "{{$.pipeline_job_uuid}}",
    "{{$.pipeline_job_resource_name}}",
)
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


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


def set_aside_undeclared_outputs(executor_input: dict, declared: List[str]) -> List[str]:
    """Removes the output artifacts whose keys the component does not declare (the
    orchestrator's own, such as `executor-logs`); returns their keys."""
    outputs = executor_input.get("outputs", {}).get("artifacts", {})
    undeclared = sorted(key for key in outputs if key not in declared)
    for key in undeclared:
        del outputs[key]
    return undeclared


def run_id_of(executor_input: dict) -> Optional[str]:
    """The run's id in the outputs' URIs: `<root>/<pipeline>/<run id>/<task>/<key>`, with a
    salt before the key from Kubeflow Pipelines 2.4 (both UUIDs)."""
    for listed in executor_input.get("outputs", {}).get("artifacts", {}).values():
        for artifact in listed.get("artifacts", []):
            parts = artifact.get("uri", "").rstrip("/").split("/")
            if len(parts) >= 5 and UUID.match(parts[-2]) and UUID.match(parts[-4]):
                return parts[-4]
            if len(parts) >= 4 and UUID.match(parts[-3]):
                return parts[-3]
    return None


def fill_job_placeholders(executor_input: dict) -> List[str]:
    """Replaces each parameter that is exactly a job placeholder (a backend before 2.5 left it
    as compiled) by the run's id; returns the parameters' names."""
    values = executor_input.get("inputs", {}).get("parameterValues", {})
    names = [name for name, value in values.items() if value in JOB_PLACEHOLDERS]
    run_id = run_id_of(executor_input) if names else None
    if not names:
        return []
    if run_id is None:
        raise ValueError(
            f"the parameters {names} are left as compiled ({values[names[0]]}) and no output URI "
            "names the run: cannot tell the run's id"
        )
    for name in names:
        values[name] = run_id
    return names


def task_output_file(executor_input: dict) -> Optional[str]:
    """Where the task's executor output goes on the pod's disk as from 2.15, `/gcs/<task
    root>/output_metadata.json`, when the backend gave it the legacy file; else None."""
    if executor_input.get("outputs", {}).get("outputFile") != LEGACY_OUTPUT_FILE:
        return None
    uris = [
        artifact["uri"]
        for listed in executor_input["outputs"].get("artifacts", {}).values()
        for artifact in listed.get("artifacts", [])
    ]
    if not uris or not all(u.startswith("gs://") for u in uris):
        return None
    task_root = os.path.dirname(uris[0].rstrip("/"))
    return os.path.join("/gcs", task_root[len("gs://") :], "output_metadata.json")


def value_of(argv: List[str], flag: str) -> "int | None":
    """The index of `flag`'s value in `argv` (as `--flag VALUE` or `--flag=VALUE`), or None."""
    for at, part in enumerate(argv):
        if part == flag and at + 1 < len(argv):
            return at + 1
        if part.startswith(flag + "="):
            return at
    return None


def read(argv: List[str], at: int, flag: str) -> str:
    return argv[at][len(flag) + 1 :] if argv[at].startswith(flag + "=") else argv[at]


class Invocation:
    """One step's command line, made into the one TFX's entrypoint reads (the module's
    docstring): `argv` to run it with, and `finish()` to call once it has run."""

    def __init__(self, argv: List[str]):
        argv = list(argv)
        declared: Optional[List[str]] = None
        at = value_of(argv, DECLARED_OUTPUTS)
        if at is not None:
            declared = json.loads(read(argv, at, DECLARED_OUTPUTS))
            del argv[at - (0 if argv[at].startswith(DECLARED_OUTPUTS + "=") else 1) : at + 1]
        self.argv = argv
        self.outputs: List[str] = []  # the declared outputs' URIs
        self.set_aside: List[str] = []
        self.filled: List[str] = []
        self.output_file: Optional[str] = None  # where TFX writes it, when not where it is read
        invocation, spec = value_of(argv, INVOCATION), value_of(argv, INPUTS_SPEC)
        if invocation is None:
            return
        executor_input = json.loads(read(argv, invocation, INVOCATION))
        if spec is not None:
            fill_input_types(executor_input, json.loads(read(argv, spec, INPUTS_SPEC)))
        if declared is not None:
            self.set_aside = set_aside_undeclared_outputs(executor_input, declared)
        self.filled = fill_job_placeholders(executor_input)
        self.outputs = [
            artifact["uri"]
            for listed in executor_input.get("outputs", {}).get("artifacts", {}).values()
            for artifact in listed.get("artifacts", [])
        ]
        self.output_file = task_output_file(executor_input)
        if self.output_file:
            executor_input["outputs"]["outputFile"] = self.output_file
        text = json.dumps(executor_input)
        self.argv[invocation] = (
            f"{INVOCATION}={text}" if argv[invocation].startswith(INVOCATION + "=") else text
        )

    def finish(self) -> List[str]:
        """Once TFX has run: the executor output where the launcher reads it, the outputs'
        folder markers removed (the module's docstring); returns the markers removed."""
        self.copy_output_file()
        uris = [uri for uri in self.outputs if uri.startswith("gs://")]
        return remove_folder_markers(uris) if uris else []

    def copy_output_file(self) -> None:
        """The executor output TFX wrote to the task's own file, where the launcher reads it."""
        if self.output_file and os.path.exists(self.output_file):
            os.makedirs(os.path.dirname(LEGACY_OUTPUT_FILE), exist_ok=True)
            shutil.copyfile(self.output_file, LEGACY_OUTPUT_FILE)


def folder_markers(names: List[str]) -> List[str]:
    """The names of `names` that are folder markers (ending in "/") of folders holding other
    objects."""
    markers = [n for n in names if n.endswith("/")]
    return [m for m in markers if any(n != m and n.startswith(m) for n in names)]


def remove_folder_markers(uris: List[str], client=None) -> List[str]:
    """Deletes the zero-byte markers of non-empty folders under each gs:// URI (the artifact's
    own folder's included); returns the gs:// URIs of those deleted."""
    if client is None:
        from google.cloud import storage

        client = storage.Client(project=None)
    removed = []
    for uri in uris:
        bucket_name, _, key = uri[len("gs://") :].partition("/")
        blobs = {b.name: b for b in client.list_blobs(bucket_name, prefix=key.rstrip("/"))}
        under = [
            n for n in blobs if n == key.rstrip("/") + "/" or n.startswith(key.rstrip("/") + "/")
        ]
        for name in folder_markers(under):
            if blobs[name].size == 0:
                blobs[name].delete()
                removed.append(f"gs://{bucket_name}/{name}")
    return removed


def fixed_arguments(argv: List[str]) -> List[str]:
    """`argv` as TFX's entrypoint reads it (Invocation)."""
    return Invocation(argv).argv


def main() -> None:
    from absl import app, logging
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_run_executor as tfx_entrypoint

    invocation = Invocation(sys.argv)
    sys.argv = invocation.argv

    def run(parsed) -> None:
        if invocation.set_aside:
            logging.info("Outputs the orchestrator added, left to it: %s", invocation.set_aside)
        if invocation.filled:
            logging.info("Parameters given the run's id for a placeholder: %s", invocation.filled)
        tfx_entrypoint.main(parsed)
        removed = invocation.finish()
        if removed:
            logging.info(
                "Removed %d folder markers from the outputs (kubeflow/pipelines#13476): %s",
                len(removed),
                removed[:5],
            )

    app.run(run, flags_parser=tfx_entrypoint._parse_flags)


if __name__ == "__main__":
    main()
