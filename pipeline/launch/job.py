"""The compiled PipelineJob as its orchestrator reads it, and what it hands each task.

`CompiledJob` holds the job's tasks, executors and parameters with every gs:// path mapped to
a folder under the output, refuses what its target would not run (checks before anything
runs), and builds each container task's ExecutorInput in the target's shape (shapes.py:
Vertex AI's, or a Kubeflow Pipelines 2 backend's).
"""

import datetime
import json
import os
import uuid
from typing import Any, Dict, List, Mapping, Optional, Set

from pipeline.cloud import TARGET_LABEL, TARGETS
from pipeline.launch.shapes import GCS, KfpBackend, ShapeError, shape_for
from pipeline.launch.shapes import substitute_placeholders as _substitute


class LaunchError(RuntimeError):
    """The job cannot be launched here (a task kind the target lacks, a cloud service)."""


def substitute_placeholders(value: Any, known: Mapping[str, str]) -> Any:
    """shapes.substitute_placeholders, its refusal a LaunchError."""
    try:
        return _substitute(value, known)
    except ShapeError as error:
        raise LaunchError(str(error)) from None


def map_gcs(value: Any, root: str) -> Any:
    """`value` with every gs://BUCKET/PATH in its strings (JSON strings inside included)
    replaced by ROOT/gs/BUCKET/PATH."""
    if isinstance(value, str):
        return value.replace(GCS, os.path.join(root, "gs") + "/")
    if isinstance(value, list):
        return [map_gcs(v, root) for v in value]
    if isinstance(value, dict):
        return {k: map_gcs(v, root) for k, v in value.items()}
    return value


def task_order(tasks: Mapping[str, dict]) -> List[str]:
    """The tasks in dependency order (each after its dependentTasks and the producers of its
    input artifacts); ties by name, so the order is the same every time."""
    needs = {}
    for name, task in tasks.items():
        producers = {
            spec["taskOutputArtifact"]["producerTask"]
            for spec in task.get("inputs", {}).get("artifacts", {}).values()
            if "taskOutputArtifact" in spec
        }
        needs[name] = set(task.get("dependentTasks", [])) | producers
    order: List[str] = []
    done: Set[str] = set()
    while len(order) < len(tasks):
        ready = sorted(n for n in tasks if n not in done and needs[n] <= done)
        if not ready:
            raise LaunchError(f"the job's tasks have a cycle among {sorted(set(tasks) - done)}")
        order.append(ready[0])
        done.add(ready[0])
    return order


class CompiledJob:
    """One compiled job, checked, as launched under `output` (see the module's docstring).

    `target`: vertex or kubeflow (default: the job's label, else vertex). `parameters`: the
    job's parameter values to change. `in_image`: whether its tasks run in the pipeline image
    (where a path on this machine means nothing). `kfp_version`: on the kubeflow target, the
    Kubeflow Pipelines release whose input shape the tasks get (default: the newest read).
    `gcs`: gs:// paths stay as they are, on a Cloud Storage (an emulator) the tasks reach."""

    # Its arguments are the `launch` flags that shape what a task is handed, one each.
    def __init__(
        self,
        compiled: dict,
        output: str,
        target: Optional[str] = None,
        parameters: Optional[Mapping[str, str]] = None,
        in_image: bool = False,
        kfp_version: Optional[str] = None,
        gcs: bool = False,
    ):
        self.output = output
        self.in_image = in_image
        self.target = target or compiled.get("labels", {}).get(TARGET_LABEL, "vertex")
        if self.target not in TARGETS:
            raise LaunchError(f"target must be one of {TARGETS}, not {self.target!r}")
        self.compiled = compiled  # kept for cache keys: what Vertex AI would hash
        # Where gs:// paths are: a folder standing in for every bucket, or (`gcs`) Cloud Storage
        # itself (an emulator, launch.gcs), the paths kept as they are.
        self.gcs = gcs
        self.bucket = os.path.join(output, "gs")
        self.mapped = json.loads(json.dumps(compiled)) if gcs else map_gcs(compiled, output)
        spec = self.mapped["pipelineSpec"]
        self.pipeline_name: str = spec["pipelineInfo"]["name"]
        self.tasks: Dict[str, dict] = spec["root"]["dag"]["tasks"]
        self.components: Dict[str, dict] = spec["components"]
        self.check_target()
        self.check_services()
        self.parameters = self.runtime_parameters(parameters or {})
        stamp = datetime.datetime.now().strftime("%Y%m%d%H%M%S")
        self.job_name = f"{self.pipeline_name}-{stamp}-{uuid.uuid4().hex[:6]}"
        runtime = self.mapped.get("runtimeConfig", {})
        self.root = runtime.get("gcsOutputDirectory") or os.path.join(output, "pipeline_root")
        try:
            backend = KfpBackend.of(kfp_version) if kfp_version else None
        except ShapeError as error:
            raise LaunchError(str(error)) from None
        if backend is not None and self.target != "kubeflow":
            raise LaunchError(
                "--kfp-version names a Kubeflow Pipelines backend: use it with the kubeflow target"
            )
        self.shape = shape_for(
            self.target, self.pipeline_name, self.job_name, self.root, self.bucket, backend
        )
        self.check_resources()

    def order(self) -> List[str]:
        return task_order(self.tasks)

    def executor_of(self, task_name: str, compiled: bool = False) -> dict:
        """The task's executor spec, as it runs here (paths mapped) or, with `compiled`, as it
        was compiled (what Vertex AI hashes into the cache key)."""
        spec = (self.compiled if compiled else self.mapped)["pipelineSpec"]
        component = spec["components"][self.tasks[task_name]["componentRef"]["name"]]
        return spec["deploymentSpec"]["executors"][component["executorLabel"]]

    def executor_args(self, name: str) -> List[str]:
        return self.executor_of(name).get("container", {}).get("args", [])

    def pod_secrets(self, name: str) -> List[tuple]:
        """(secret, key, variable) of each variable the task's pod gets from a Kubernetes
        secret (the kubeflow target's platform spec)."""
        from pipeline.kubeflow_runner import PLATFORM_SPEC
        from pipeline.pods import secret_environment

        label = self.components[self.tasks[name]["componentRef"]["name"]]["executorLabel"]
        return secret_environment(self.compiled.get(PLATFORM_SPEC, {}), label)

    def pod_environment(self, name: str, secrets: Mapping[str, str]) -> Dict[str, str]:
        """The variables the task's pod gets from Kubernetes secrets, their values from
        `secrets` ("SECRET/KEY" -> value), as `kubectl create secret` would hold them; a
        LaunchError for one the launch was not given, which would keep the pod from
        starting."""
        environment = {}
        for secret, key, variable in self.pod_secrets(name):
            if f"{secret}/{key}" not in secrets:
                raise LaunchError(
                    f"task {name}: its pod takes {variable} from the key {key!r} of the secret "
                    f"{secret!r}, which would keep it from starting where the secret has no such "
                    f"key (CreateContainerConfigError): pass --secret {secret}/{key}=VALUE"
                )
            environment[variable] = secrets[f"{secret}/{key}"]
        return environment

    def output_definitions(self, name: str) -> Dict[str, dict]:
        """The task's output artifacts as its component declares them, by key."""
        component = self.components[self.tasks[name]["componentRef"]["name"]]
        return component.get("outputDefinitions", {}).get("artifacts", {})

    # What the target refuses, before anything runs.

    def check_target(self) -> None:
        """Refuses what the target does not run: on Kubeflow Pipelines 2, resolver tasks and
        pre-cache checks; anywhere, executors other than containers and resolvers."""
        for name in self.tasks:
            executor = self.executor_of(name)
            kind = next(iter(executor))
            if kind not in ("container", "resolver"):
                raise LaunchError(
                    f"task {name}: launch runs container and resolver tasks, not {kind}"
                )
            if self.target != "kubeflow":
                continue
            if kind == "resolver":
                raise LaunchError(
                    f"task {name} is a resolver, which Kubeflow Pipelines 2 does not run "
                    "('resolver executors not implemented'): compile with --target kubeflow"
                )
            if "preCacheCheck" in executor["container"].get("lifecycle", {}):
                raise LaunchError(
                    f"task {name} has a pre-cache check, which Kubeflow Pipelines 2 does not "
                    "run: compile with --target kubeflow"
                )

    def check_services(self) -> None:
        """Refuses a job whose steps call a Google service launch cannot stand in for."""
        for name, task in self.tasks.items():
            for parameter in task.get("inputs", {}).get("parameters", {}).values():
                constant = parameter.get("runtimeValue", {}).get("constant")
                if isinstance(constant, str) and '"backend": "vertex"' in constant:
                    raise LaunchError(
                        f"task {name} registers models in Vertex AI's Model Registry, which a "
                        "launch cannot stand in for: compile with MODEL_REGISTRY=mlflow (and "
                        "MLFLOW_TRACKING_URI, a tracking server) or MODEL_REGISTRY=none"
                    )

    def check_resources(self) -> None:
        """Refuses a pod the target's cluster would refuse (shapes.KubeflowShape)."""
        for name in self.tasks:
            container = self.executor_of(name).get("container")
            if container is None:
                continue
            try:
                self.shape.pod_resources(container)
            except ShapeError as error:
                raise LaunchError(f"task {name}: {error}") from None

    def runtime_parameters(self, given: Mapping[str, str]) -> dict:
        """The job's parameter values, those `given` winning; a gs:// value is mapped under
        the output; here (not in the image), a relative path that exists is made absolute."""
        values = dict(self.mapped.get("runtimeConfig", {}).get("parameterValues", {}))
        declared = (
            self.mapped["pipelineSpec"]["root"].get("inputDefinitions", {}).get("parameters", {})
        )
        for name, value in given.items():
            if name not in values and name not in declared:
                known = ", ".join(sorted(set(values) | set(declared))) or "none"
                raise LaunchError(f"the job has no parameter {name!r} (it has: {known})")
            value = value if self.gcs else map_gcs(value, self.output)
            if not self.in_image and not value.startswith(("/", "{")) and os.path.exists(value):
                value = os.path.abspath(value)
            values[name] = value
        return values

    # What a task is handed.

    def input_artifacts(self, name: str, outputs: Mapping[str, Mapping[str, List[dict]]]) -> dict:
        """The task's input artifacts, by key: what its producers' `outputs` hold."""
        found = {}
        for key, spec in self.tasks[name].get("inputs", {}).get("artifacts", {}).items():
            if "taskOutputArtifact" not in spec:
                raise LaunchError(f"task {name}: input {key} is not another task's output")
            producer = spec["taskOutputArtifact"]
            found[key] = outputs.get(producer["producerTask"], {}).get(
                producer["outputArtifactKey"], []
            )
        return found

    def parameter_values(self, name: str) -> Dict[str, Any]:
        """The task's parameters: its constants as the target hands them (placeholders
        filled), the job's parameters it reads."""
        values = {}
        for key, spec in self.tasks[name].get("inputs", {}).get("parameters", {}).items():
            if "runtimeValue" in spec:
                try:
                    values[key] = self.shape.parameter(spec["runtimeValue"]["constant"], name)
                except ShapeError as error:
                    raise LaunchError(str(error)) from None
            elif "componentInputParameter" in spec:
                values[key] = self.parameters[spec["componentInputParameter"]]
            else:
                raise LaunchError(f"task {name}: parameter {key} is neither constant nor the job's")
        return values

    def executor_input(
        self, inputs, parameters, outputs, output_file: str, task_root: str = ""
    ) -> dict:
        """The ExecutorInput the target hands a container task, in its shape (with the outputs
        the orchestrator adds to every task under `task_root`)."""
        added = self.shape.launcher_outputs(task_root) if task_root else {}
        return {
            "inputs": {
                "parameterValues": parameters,
                "artifacts": {
                    key: {"artifacts": [self.shape.input_artifact(a, key) for a in listed]}
                    for key, listed in inputs.items()
                    if listed
                },
            },
            "outputs": {
                "artifacts": {
                    **{
                        key: {"artifacts": [self.shape.output_artifact(a, key) for a in listed]}
                        for key, listed in outputs.items()
                    },
                    **{key: {"artifacts": [artifact]} for key, artifact in added.items()},
                },
                "outputFile": output_file,
            },
        }
