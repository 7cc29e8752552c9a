"""How each orchestrator hands a container task its ExecutorInput, as its own code builds it.

Vertex AI Pipelines (`VertexShape`): input and output artifacts named by their Vertex ML
Metadata resource names, each with its type; outputs under
`<pipeline root>/<job>/<task>_<id>/<key>`; the executor output file in the bucket beside them;
KFP's job-level placeholders filled in inside a parameter's value.

A Kubeflow Pipelines 2 backend (`KubeflowShape`), as the release named by `--kfp-version`
builds it (kubeflow/pipelines' `backend/src/v2`; `KfpBackend` holds what changed, and in which
release):
- input artifacts read back from ML Metadata (`driver/resolve.go`, `metadata/client.go`
  `GetOutputArtifactsByExecutionId`): named by their integer MLMD id, with an empty type
  (`instanceSchema: ""`, the backend keeps none), their metadata the artifact's properties
  plus the `display_name` (and from 2.3 the `store_session_info`) the launcher records
  (`RecordArtifact`);
- output artifacts under `<pipeline root>/<pipeline>/<run id>/<task>/<key>`, from 2.4 with a
  random salt before the key (`driver.go` `provisionOutputs`, `GetPipeline`); from 2.5 with
  one more, `executor-logs` (typed `system.Artifact`), which the launcher writes the task's
  log to; from 2.15 each named by its key;
- the executor output file on the pod's own disk: before 2.15 `/tmp/kfp_outputs/
  output_metadata.json` for every task, from 2.15 `/gcs/<the task root's path>/
  output_metadata.json` (`component.LocalPathForURI`), which the launcher reads back;
- from 2.5, a parameter's constant that is exactly a job placeholder replaced,
  `{{$.pipeline_job_name}}` by the run's display name (`resolvePodSpecInputRuntimeParameter`,
  later `resolve.go`); before 2.5 every constant as compiled, placeholders included;
- each pod's resources as the driver writes them into the pod spec (`driver.go`
  `initPodSpecPatch`), which the Kubernetes API server checks (resource names, quantities).
"""

import dataclasses
import json
import os
import re
import uuid
from typing import Any, Dict, Mapping, Optional, Tuple

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


# The Kubeflow Pipelines releases whose backend was read for KfpBackend, oldest and newest.
OLDEST_KFP, NEWEST_KFP = "2.0.0", "2.17.0"
# Where the ExecutorInput a step sees changed (the release that changed it): the ranges the
# docs list and each of which a launch is tested in. Within 2.0-2.3, 2.3 adds only the inputs'
# `store_session_info`, which no step reads.
KFP_RANGES = (("2.0", "2.3"), ("2.4", "2.4"), ("2.5", "2.14"), ("2.15", NEWEST_KFP[:4]))
# The executor output file before 2.15 (`component.OutputMetadataFilepath`).
LEGACY_OUTPUT_FILE = "/tmp/kfp_outputs/output_metadata.json"
EXECUTOR_LOGS = "executor-logs"


def parse_version(text: str) -> Tuple[int, int, int]:
    """(2, 14, 3) of "2.14.3" (or "2.14"); a ShapeError naming the range for anything else."""
    parts = text.strip().lstrip("v").split(".")
    try:
        numbers = tuple(int(p) for p in parts)
    except ValueError:
        numbers = ()
    if not 2 <= len(numbers) <= 3 or numbers[0] != 2:
        raise ShapeError(
            f"--kfp-version {text!r}: a Kubeflow Pipelines 2 release, such as {NEWEST_KFP}"
        )
    return (numbers + (0,))[:3]  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True)
class KfpBackend:
    """What a Kubeflow Pipelines 2 backend's driver and launcher hand a container task, by
    release (kubeflow/pipelines `backend/src/v2`, read at each release tag from OLDEST_KFP to
    NEWEST_KFP). A release newer than NEWEST_KFP is taken to behave as NEWEST_KFP."""

    version: Tuple[int, int, int]

    @classmethod
    def of(cls, text: str) -> "KfpBackend":
        version = parse_version(text)
        if version < parse_version(OLDEST_KFP):
            raise ShapeError(f"--kfp-version {text}: Kubeflow Pipelines 2 starts at {OLDEST_KFP}")
        return cls(version)

    @property
    def name(self) -> str:
        return ".".join(str(n) for n in self.version)

    @property
    def newer_than_read(self) -> bool:
        return self.version > parse_version(NEWEST_KFP)

    @property
    def records_store_session(self) -> bool:
        """Input artifacts carry the `store_session_info` the launcher records (2.3)."""
        return self.version >= (2, 3, 0)

    @property
    def salts_outputs(self) -> bool:
        """Output URIs get a random salt between the task and the key (2.4)."""
        return self.version >= (2, 4, 0)

    @property
    def adds_executor_logs(self) -> bool:
        """Every task gets an `executor-logs` output it does not declare (2.5, `publish_logs`
        on by default)."""
        return self.version >= (2, 5, 0)

    @property
    def fills_job_placeholders(self) -> bool:
        """A constant that is exactly `{{$.pipeline_job_name}}` (or another job placeholder)
        is replaced (2.5); before, the step gets the placeholder itself."""
        return self.version >= (2, 5, 0)

    @property
    def names_outputs(self) -> bool:
        """Output artifacts are named by their keys, and the executor output file lies under
        the task root's `/gcs/` path (2.15); before, outputs have no name and the file is
        LEGACY_OUTPUT_FILE for every task."""
        return self.version >= (2, 15, 0)

    @property
    def checks_download_prefix(self) -> bool:
        """The launcher's download skips listed keys outside the artifact's folder and refuses
        a key that climbs out of it (2.17, `isBlobKeyUnderPrefix`, `sanitizeDownloadPath`)."""
        return self.version >= (2, 17, 0)


def releases_table() -> str:
    """What a step is handed on each range of Kubeflow Pipelines releases (docs/kubeflow.md's
    table, made from KfpBackend)."""
    rows = [
        "| releases | outputs under the task's folder | outputs named | `executor-logs` added "
        "| `{{$.pipeline_job_name}}` | executor output file |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for low, high in KFP_RANGES:
        backend = KfpBackend.of(low)
        rows.append(
            "| "
            + " | ".join(
                [
                    low if low == high else f"{low}-{high}",
                    "`<task>/<salt>/<key>`" if backend.salts_outputs else "`<task>/<key>`",
                    "yes" if backend.names_outputs else "no",
                    "yes" if backend.adds_executor_logs else "no",
                    "the run's name" if backend.fills_job_placeholders else "left as compiled",
                    "`/gcs/<task root>/output_metadata.json`"
                    if backend.names_outputs
                    else f"`{LEGACY_OUTPUT_FILE}`",
                ]
            )
            + " |"
        )
    return "\n".join(rows)


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

    def launcher_outputs(self, task_root: str) -> Dict[str, dict]:
        """Outputs the orchestrator adds to every task: none on Vertex AI."""
        return {}

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
    """A Kubeflow Pipelines 2 backend's ExecutorInput (the module's docstring), as `backend`'s
    release builds it. The run has an id of its own (a UUID, as the API server makes) and the
    display name `job_name`."""

    name = "kubeflow"

    def __init__(
        self,
        pipeline_name: str,
        job_name: str,
        root: str,
        gcs_root: str,
        backend: Optional[KfpBackend] = None,
    ):
        super().__init__(pipeline_name, job_name, root)
        self.backend = backend or KfpBackend.of(NEWEST_KFP)
        self.run_id = str(uuid.uuid4())
        # gs://BUCKET/PATH as launch maps it to a folder (GCS_ROOT/BUCKET/PATH), when it does.
        self.gcs_root = gcs_root

    def task_root(self, task: str) -> str:
        """`<root>/<pipeline>/<run id>/<task>`, and from 2.4 a salt of its own (`provisionOutputs`
        joins it between the task and the output's key)."""
        parts = [self.root.rstrip("/"), self.pipeline_name, self.run_id, task]
        if self.backend.salts_outputs:
            parts.append(str(uuid.uuid4()))
        return "/".join(parts)

    def local_path(self, uri: str, pod_root: str) -> str:
        """Where the launcher keeps `uri` on the pod's disk (`component.LocalPathForURI`:
        `/gcs/BUCKET/PATH` for gs://BUCKET/PATH), under `pod_root` (`/` inside the image)."""
        if uri.startswith(GCS):
            relative = uri[len(GCS) :]
        else:  # a gs:// path launch maps to a folder
            relative = os.path.relpath(uri, self.gcs_root)
        return os.path.join(pod_root, "gcs", relative)

    def output_file(self, task_root: str, pod_root: str) -> str:
        """The executor output file on the pod's own disk, whose root is `pod_root`: from 2.15
        `/gcs/<task root's bucket path>/output_metadata.json`, before that
        LEGACY_OUTPUT_FILE."""
        if self.backend.names_outputs:
            return os.path.join(self.local_path(task_root, pod_root), "output_metadata.json")
        return os.path.join(pod_root, LEGACY_OUTPUT_FILE.lstrip("/"))

    def input_artifact(self, artifact: Mapping[str, Any], key: str) -> dict:
        metadata = dict(artifact.get("metadata", {}))
        metadata.setdefault("display_name", artifact.get("output_key", key))
        if self.backend.records_store_session:
            metadata.setdefault(
                "store_session_info",
                json.dumps({"Provider": "gs", "Params": {"fromEnv": "true"}}),
            )
        return {
            "name": str(artifact["sequence"]),
            "type": {"instanceSchema": ""},
            "uri": artifact["uri"],
            "metadata": metadata,
        }

    def output_artifact(self, artifact: Mapping[str, Any], key: str) -> dict:
        return {
            **({"name": key} if self.backend.names_outputs else {}),
            "type": {"instanceSchema": artifact["instance_schema"]},
            "uri": artifact["uri"],
            **({"metadata": artifact["metadata"]} if artifact.get("metadata") else {}),
        }

    def launcher_outputs(self, task_root: str) -> Dict[str, dict]:
        """The outputs the backend adds to every task, by key: from 2.5 `executor-logs`, a
        `system.Artifact` the launcher writes the task's log to."""
        if not self.backend.adds_executor_logs:
            return {}
        logs = {
            **({"name": EXECUTOR_LOGS} if self.backend.names_outputs else {}),
            "type": {"schemaTitle": "system.Artifact"},
            "uri": f"{task_root}/{EXECUTOR_LOGS}",
        }
        return {EXECUTOR_LOGS: logs}

    def placeholders(self, task: str) -> Dict[str, str]:
        return {
            JOB_NAME: self.job_name,
            JOB_RESOURCE_NAME: f"run-resource-{self.run_id}",
            JOB_UUID: self.run_id,
            TASK_NAME: task,
        }

    def parameter(self, value: Any, task: str) -> Any:
        """From 2.5 the driver replaces a constant that is exactly one placeholder, nothing
        else; before 2.5, nothing."""
        if not self.backend.fills_job_placeholders or not isinstance(value, str):
            return value
        return self.placeholders(task).get(value, value)

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
    target: str,
    pipeline_name: str,
    job_name: str,
    root: str,
    gcs_root: str,
    backend: Optional[KfpBackend] = None,
) -> VertexShape:
    if target == "kubeflow":
        return KubeflowShape(pipeline_name, job_name, root, gcs_root, backend)
    return VertexShape(pipeline_name, job_name, root)
