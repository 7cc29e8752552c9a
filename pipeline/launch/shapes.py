"""How each orchestrator hands a container task its ExecutorInput, as its own code builds it.

Vertex AI Pipelines (`VertexShape`): input and output artifacts named by their Vertex ML
Metadata resource names, each with its type; outputs under
`<pipeline root>/<job>/<task>_<id>/<key>`; the executor output file in the bucket beside them;
KFP's job-level placeholders filled in inside a parameter's value.

A Kubeflow Pipelines 2 backend (`KubeflowShape`), as kubeflow/pipelines' `backend/src/v2`
builds it:
- input artifacts read back from ML Metadata (`driver/resolve.go`, `metadata/client.go`
  `GetOutputArtifactsByExecutionId`): named by their integer MLMD id, with an empty type
  (`instanceSchema: ""`, the backend keeps none), their metadata the artifact's properties
  plus the `display_name` and `store_session_info` the launcher records (`RecordArtifact`);
- output artifacts named by their keys, under
  `<pipeline root>/<pipeline>/<run id>/<task>/<random id>/<key>` (`driver.go`
  `provisionOutputs`, `GetPipeline`);
- the executor output file on the pod's own disk: `/gcs/<the task root's path>/
  output_metadata.json` (`component.LocalPathForURI`), which the launcher reads back;
- a parameter's constant that is exactly a placeholder replaced, `{{$.pipeline_job_name}}` by
  the run's display name (`resolvePodSpecInputRuntimeParameter`); any other value kept as it is;
- each pod's resources as the driver writes them into the pod spec (`driver.go`
  `initPodSpecPatch`), which the Kubernetes API server checks (resource names, quantities).
"""

import json
import os
import re
import uuid
from typing import Any, Dict, Mapping, Optional

import yaml

GCS = "gs://"
# KFP's job-level placeholders a parameter may hold.
JOB_NAME, JOB_RESOURCE_NAME = "{{$.pipeline_job_name}}", "{{$.pipeline_job_resource_name}}"
JOB_UUID, TASK_NAME = "{{$.pipeline_job_uuid}}", "{{$.pipeline_task_name}}"
PLACEHOLDER = re.compile(r"\{\{\$[^}]*\}\}")
# Kubernetes: a resource name is a standard one or a domain-prefixed extended resource; a
# quantity is a number with an optional SI or binary suffix.
STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")
RESOURCE_NAME = re.compile(
    r"^(hugepages-\S+|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+/"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$"
)
QUANTITY = re.compile(r"^\+?[0-9]+(\.[0-9]*)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][0-9]+)?$")


class ShapeError(ValueError):
    """What the orchestrator (or the cluster's API server) would refuse."""


def schema_title(instance_schema: str) -> str:
    return (yaml.safe_load(instance_schema) or {}).get("title", "tfx.Artifact")


def substitute_placeholders(value: Any, known: Mapping[str, str]) -> Any:
    """A parameter constant with KFP's job-level placeholders filled in, anywhere in the
    value; any other placeholder is an error naming it."""
    if not isinstance(value, str) or "{{$" not in value:
        return value
    for placeholder, replacement in known.items():
        value = value.replace(placeholder, replacement)
    leftover = PLACEHOLDER.search(value)
    if leftover:
        raise ShapeError(f"the placeholder {leftover.group(0)} is not one launch fills in")
    return value


class VertexShape:
    """Vertex AI Pipelines' ExecutorInput (the module's docstring)."""

    name = "vertex"

    def __init__(self, pipeline_name: str, job_name: str, root: str):
        self.pipeline_name, self.job_name, self.root = pipeline_name, job_name, root

    def task_root(self, task: str) -> str:
        return os.path.join(self.root, self.job_name, f"{task}_{uuid.uuid4().hex[:8]}")

    def output_uri(self, task_root: str, key: str) -> str:
        return os.path.join(task_root, key)

    def output_file(self, task_root: str, pod_root: str) -> str:
        """The executor output file's path, as the task is told it: in the bucket."""
        return os.path.join(task_root, "executor_output.json")

    def input_artifact(self, artifact: Mapping[str, Any], key: str) -> dict:
        return {
            "name": artifact["name"],
            "type": {"instanceSchema": artifact["instance_schema"]},
            "uri": artifact["uri"],
            "metadata": artifact.get("metadata", {}),
        }

    def output_artifact(self, artifact: Mapping[str, Any], key: str) -> dict:
        return self.input_artifact(artifact, key)

    def placeholders(self, task: str) -> Dict[str, str]:
        return {
            JOB_NAME: self.job_name,
            JOB_RESOURCE_NAME: f"projects/local/pipelineJobs/{self.job_name}",
            TASK_NAME: task,
        }

    def parameter(self, value: Any, task: str) -> Any:
        return substitute_placeholders(value, self.placeholders(task))

    def pod_resources(self, container: Mapping[str, Any]) -> Optional[dict]:
        """Vertex AI picks a machine for the resources; nothing to check here."""
        return None


class KubeflowShape(VertexShape):
    """A Kubeflow Pipelines 2 backend's ExecutorInput (the module's docstring). The run has an
    id of its own (a UUID, as the API server makes) and the display name `job_name`."""

    name = "kubeflow"

    def __init__(self, pipeline_name: str, job_name: str, root: str, gcs_root: str):
        super().__init__(pipeline_name, job_name, root)
        self.run_id = str(uuid.uuid4())
        # gs://BUCKET/PATH as launch maps it (GCS_ROOT/BUCKET/PATH): the pod-local /gcs/ path.
        self.gcs_root = gcs_root

    def task_root(self, task: str) -> str:
        return "/".join(
            [self.root.rstrip("/"), self.pipeline_name, self.run_id, task, str(uuid.uuid4())]
        )

    def output_file(self, task_root: str, pod_root: str) -> str:
        """`/gcs/<task root's bucket path>/output_metadata.json` on the pod's own disk, whose
        root is `pod_root` (`/` inside the image; a folder of the launch's in this
        environment)."""
        relative = os.path.relpath(task_root, self.gcs_root)
        return os.path.join(pod_root, "gcs", relative, "output_metadata.json")

    def input_artifact(self, artifact: Mapping[str, Any], key: str) -> dict:
        metadata = dict(artifact.get("metadata", {}))
        metadata.setdefault("display_name", artifact.get("output_key", key))
        metadata.setdefault("store_session_info", json.dumps({"Provider": "gs", "Params": {}}))
        return {
            "name": str(artifact["sequence"]),
            "type": {"instanceSchema": ""},
            "uri": artifact["uri"],
            "metadata": metadata,
        }

    def output_artifact(self, artifact: Mapping[str, Any], key: str) -> dict:
        return {
            "name": key,
            "type": {"instanceSchema": artifact["instance_schema"]},
            "uri": artifact["uri"],
            **({"metadata": artifact["metadata"]} if artifact.get("metadata") else {}),
        }

    def placeholders(self, task: str) -> Dict[str, str]:
        return {
            JOB_NAME: self.job_name,
            JOB_RESOURCE_NAME: f"run-resource-{self.run_id}",
            JOB_UUID: self.run_id,
            TASK_NAME: task,
        }

    def parameter(self, value: Any, task: str) -> Any:
        """The driver replaces a constant that is exactly one placeholder, nothing else."""
        return self.placeholders(task).get(value, value) if isinstance(value, str) else value

    def pod_resources(self, container: Mapping[str, Any]) -> Optional[dict]:
        """The pod's {"limits", "requests"} as the driver writes them from the container's
        ResourceSpec; raises ShapeError for what the Kubernetes API server rejects (an
        accelerator that is not a resource name, a bad quantity)."""
        spec = container.get("resources")
        if not spec:
            return None
        limits: Dict[str, str] = {}
        requests: Dict[str, str] = {}
        for target, name, text, number, unit in (
            (limits, "memory", "resourceMemoryLimit", "memoryLimit", "G"),
            (requests, "memory", "resourceMemoryRequest", "memoryRequest", "G"),
            (limits, "cpu", "resourceCpuLimit", "cpuLimit", ""),
            (requests, "cpu", "resourceCpuRequest", "cpuRequest", ""),
        ):
            value = spec.get(text) or (f"{spec[number]:g}{unit}" if spec.get(number) else "")
            if value:
                target[name] = str(value)
        accelerator = spec.get("accelerator") or {}
        kind = accelerator.get("resourceType") or accelerator.get("type")
        count = accelerator.get("resourceCount") or accelerator.get("count")
        if kind and count:
            limits[kind] = str(count)
        for listed in (limits, requests):
            for name, quantity in listed.items():
                if name not in STANDARD_RESOURCES and not RESOURCE_NAME.match(name):
                    raise ShapeError(
                        f"the pod asks for {name}: {quantity}, and {name!r} is not a Kubernetes "
                        "resource name (the API server refuses the pod); an accelerator is "
                        "asked for by its device plugin's name, such as nvidia.com/gpu"
                    )
                if not QUANTITY.match(quantity):
                    raise ShapeError(f"the pod asks for {name}: {quantity!r}, not a quantity")
        return {"limits": limits, "requests": requests}


def shape_for(
    target: str, pipeline_name: str, job_name: str, root: str, gcs_root: str
) -> VertexShape:
    if target == "kubeflow":
        return KubeflowShape(pipeline_name, job_name, root, gcs_root)
    return VertexShape(pipeline_name, job_name, root)
