"""Runs a compiled PipelineJob on this machine, task by task, as its orchestrator would: each
container task's own command line (TFX's container entrypoint, the ExampleGen driver as its
pre-cache check), in a process of its own or inside the pipeline image (`--image`:
runners.py), given the ExecutorInput the orchestrator builds (Vertex AI's, or a Kubeflow
Pipelines 2 backend's: shapes.py) and read back through the ExecutorOutput it writes;
resolver tasks answered by their filters over the artifacts the launches recorded; Vertex AI
training jobs by a local job service (job_service.py); task caching as Vertex AI caches, each
task's compiled setting kept unless the launch overrides every one.

What changes on the way, and is reported: every gs:// path becomes a folder under the
output, Beam steps compiled for Dataflow run on the local runner (pipeline/local_beam.py)
with their other options kept, and without `--image`, `python` is this environment's
interpreter. What a launch does not prove: IAM, quotas, Cloud Storage, Dataflow's and Vertex
AI's services, GPUs.
"""

import datetime
import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
import uuid
from typing import Any, Dict, List, Mapping, Optional, Set, TextIO, Union

from pipeline import configs
from pipeline.cloud import TARGET_LABEL, TARGETS
from pipeline.launch import filters
from pipeline.launch.job_service import JobService
from pipeline.launch.runners import ImageRunner, LocalRunner
from pipeline.launch.shapes import GCS, ShapeError, shape_for
from pipeline.launch.shapes import schema_title as schema_title
from pipeline.launch.shapes import substitute_placeholders as _substitute
from pipeline.launch.store import Store

DATAFLOW = "--runner=DataflowRunner"
# The local runner's options for steps compiled for Dataflow (as `run`'s default, in memory).
LOCAL_BEAM = [
    f"--runner={configs.LOCAL_BEAM_RUNNER}",
    "--direct_running_mode=in_memory",
    "--direct_num_workers=1",
]
CLOUD_TRAINING = "tfx.extensions.google_cloud_ai_platform."
EXECUTOR_INPUT = "{{$}}"
PROGRESS_LINE = re.compile(r"progress\.py:\d+\] (.*)$")
LOG_TAIL_LINES = 25


def failure_reason(tail: List[str], code: int) -> str:
    """The last Python exception line of a failed task's log tail (`FileNotFoundError: ...`;
    buildah's own closing `Error: exit status 1` is not one), else its exit status."""
    exception = re.compile(r"^[\w.]+(Error|Exception)\b")
    return next(
        (line.strip() for line in reversed(tail) if exception.match(line)), f"exit status {code}"
    )


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


class Launch:
    """One launch of a compiled job (see the module's docstring); `run()` returns the summary
    and prints progress lines to `stream`.

    `image`: run every task inside this image (runners.ImageRunner) rather than here.
    `enable_cache`: None keeps each task's compiled caching, as `submit` does; True or False
    overrides every task's, as the SDKs' `enable_caching` does. `job_env`: variables set in
    every task's environment, as the job's container env would be."""

    # Its arguments are the `launch` command's flags, one each (pipeline/cli.py).
    def __init__(
        self,
        job_path: str,
        output: str,
        parameters: Optional[Mapping[str, str]] = None,
        target: Optional[str] = None,
        enable_cache: Optional[bool] = None,
        stream: Optional[TextIO] = None,
        environment: Optional[Mapping[str, str]] = None,
        fresh_processes: bool = False,
        image: Optional[str] = None,
        job_env: Optional[Mapping[str, str]] = None,
    ):
        with open(job_path) as f:
            compiled = json.load(f)
        self.output = os.path.abspath(output)
        self.stream = stream or sys.stderr
        self.enable_cache = enable_cache
        self.fresh_processes = fresh_processes
        self.image = image
        self.job_env = dict(job_env or {})
        self.environment = dict(os.environ if environment is None else environment)
        self.target = target or compiled.get("labels", {}).get(TARGET_LABEL, "vertex")
        if self.target not in TARGETS:
            raise LaunchError(f"target must be one of {TARGETS}, not {self.target!r}")
        self.compiled = compiled  # kept for cache keys: what Vertex AI would hash
        self.bucket = os.path.join(self.output, "gs")
        self.job = map_gcs(compiled, self.output)
        spec = self.job["pipelineSpec"]
        self.pipeline_name = spec["pipelineInfo"]["name"]
        self.tasks = spec["root"]["dag"]["tasks"]
        self.components = spec["components"]
        self.check_target()
        self.check_services()
        self.parameters = self.runtime_parameters(parameters or {})
        stamp = datetime.datetime.now().strftime("%Y%m%d%H%M%S")
        self.job_name = f"{self.pipeline_name}-{stamp}-{uuid.uuid4().hex[:6]}"
        runtime = self.job.get("runtimeConfig", {})
        self.root = runtime.get("gcsOutputDirectory") or os.path.join(self.output, "pipeline_root")
        self.shape = shape_for(
            self.target, self.pipeline_name, self.job_name, self.root, self.bucket
        )
        self.check_resources()
        self.store = Store(os.path.join(self.output, "launch"))
        self.log_dir = os.path.join(self.output, "launch", "logs", self.job_name)
        # Each task's own disk (a pod's /gcs/ on the kubeflow target), removed with the task.
        self.pods_dir = os.path.join(self.output, "launch", "pods", self.job_name)
        self.outputs: Dict[str, Dict[str, List[dict]]] = {}  # task -> key -> artifacts
        self.inputs: Dict[str, Dict[str, List[dict]]] = {}
        self.states: Dict[str, dict] = {}
        self.notes: List[str] = []

    # What the job may hold.

    def executor_of(self, task_name: str, compiled: bool = False) -> dict:
        """The task's executor spec, as it runs here (paths mapped) or, with `compiled`, as it
        was compiled (what Vertex AI hashes into the cache key)."""
        spec = (self.compiled if compiled else self.job)["pipelineSpec"]
        component = spec["components"][self.tasks[task_name]["componentRef"]["name"]]
        return spec["deploymentSpec"]["executors"][component["executorLabel"]]

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
        values = dict(self.job.get("runtimeConfig", {}).get("parameterValues", {}))
        declared = (
            self.job["pipelineSpec"]["root"].get("inputDefinitions", {}).get("parameters", {})
        )
        for name, value in given.items():
            if name not in values and name not in declared:
                known = ", ".join(sorted(set(values) | set(declared))) or "none"
                raise LaunchError(f"the job has no parameter {name!r} (it has: {known})")
            value = map_gcs(value, self.output)
            if not self.image and not value.startswith(("/", "{")) and os.path.exists(value):
                value = os.path.abspath(value)
            values[name] = value
        return values

    # Running it.

    def run(self) -> dict:
        order = task_order(self.tasks)
        started = time.monotonic()
        os.makedirs(self.log_dir, exist_ok=True)
        with self.store.locked():
            self.runner: Union[ImageRunner, LocalRunner]
            if self.image:
                self.runner = ImageRunner(self.image, self.bucket, self.pods_dir, {**self.job_env})
            else:
                self.runner = LocalRunner(
                    {**self.environment, **self.job_env},
                    os.path.join(self.log_dir, "forkserver.log"),
                    fresh=self.fresh_processes,
                )
            self.say_what_changes()
            self.jobs = JobService(self.runner)
            try:
                failed = self.run_tasks(order)
            finally:
                self.jobs.close()
                self.runner.close()
        from pipeline.launch.summary import summarize

        summary = summarize(self, failed)
        summary["wall_seconds"] = round(time.monotonic() - started, 2)
        return summary

    def run_tasks(self, order: List[str]):
        """Runs the tasks in `order`; after a failure the rest are skipped. Returns (task,
        error) of the failure, or None."""
        failed = None
        for number, name in enumerate(order, 1):
            if failed:
                self.states[name] = {"state": "skipped", "seconds": 0.0}
                continue
            prefix = f"[{number}/{len(order)}] {name}"
            task_started = time.monotonic()
            detail = ""
            try:
                state, detail = self.run_task(name, prefix)
            except Exception as error:  # the task failed: say which, and why
                failed = (name, error)
                state = "failed"
                self.write(f"{prefix} failed: {error}")
            seconds = round(time.monotonic() - task_started, 2)
            self.states[name] = {"state": state, "seconds": seconds}
            if state != "failed":
                self.write(f"{prefix} {state} in {seconds:.1f} s{detail}")
            self.store.save()
        return failed

    def say_what_changes(self) -> None:
        self.write(
            f"launching {self.pipeline_name} as {self.target} would run it, as job "
            f"{self.job_name}, {self.runner.describe()}; gs:// paths are folders under "
            f"{self.bucket}"
        )
        if self.target == "kubeflow":
            self.note(
                "inputs as a Kubeflow Pipelines 2 backend hands them: MLMD ids for names, no "
                "types, the executor output on the pod's disk (/gcs/...)"
            )
        if any(DATAFLOW in self.executor_args(name) for name in self.tasks):
            self.note(
                "Beam steps compiled for Dataflow run on the local runner "
                f"({configs.LOCAL_BEAM_RUNNER}, in memory), their other options kept"
            )
        if self.enable_cache is not None:
            self.note(
                f"caching {'on' if self.enable_cache else 'off'} for every task, as "
                f"submit --{'cache' if self.enable_cache else 'no-cache'} would set it"
            )
        data_dir = self.parameters.get("data_dir")
        if isinstance(data_dir, str) and self.image and not data_dir.startswith(self.bucket):
            self.note(
                f"data_dir {data_dir} is not in the bucket: a task in the image sees only the "
                "image and the bucket (copy the data under "
                f"{self.bucket}/BUCKET/... and pass --param data_dir=gs://BUCKET/...)"
            )
        elif isinstance(data_dir, str) and not self.image and not os.path.exists(data_dir):
            self.note(f"data_dir {data_dir} does not exist here: pass --param data_dir=PATH")

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.write(f"note: {text}")

    def write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def executor_args(self, name: str) -> List[str]:
        return self.executor_of(name).get("container", {}).get("args", [])

    def run_task(self, name: str, prefix: str) -> tuple:
        """(state, what to add to its line) of one task, run."""
        executor = self.executor_of(name)
        inputs = self.input_artifacts(name)
        self.inputs[name] = inputs
        if "resolver" in executor:
            self.outputs[name] = self.resolve(executor["resolver"], inputs)
            found = sum(len(v) for v in self.outputs[name].values())
            return "succeeded", f" (resolved {found} artifact{'' if found == 1 else 's'})"
        return self.run_container(name, prefix, executor["container"], inputs)

    def input_artifacts(self, name: str) -> Dict[str, List[dict]]:
        found = {}
        for key, spec in self.tasks[name].get("inputs", {}).get("artifacts", {}).items():
            if "taskOutputArtifact" not in spec:
                raise LaunchError(f"task {name}: input {key} is not another task's output")
            producer = spec["taskOutputArtifact"]
            found[key] = self.outputs.get(producer["producerTask"], {}).get(
                producer["outputArtifactKey"], []
            )
        return found

    def parameter_values(self, name: str) -> Dict[str, Any]:
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

    # Resolver tasks.

    def resolve(self, resolver: dict, inputs: Dict[str, List[dict]]) -> dict:
        """Each output query's filter over the LIVE artifacts the store holds, its
        `{{$.inputs.artifacts['KEY'].metadata['FIELD']}}` placeholders filled from the task's
        inputs (a placeholder with nothing to fill resolves nothing)."""
        resolved = {}
        for key, query in resolver.get("outputArtifactQueries", {}).items():
            text = query.get("filter", "")
            missing = False

            def fill(match):
                nonlocal missing
                artifacts = inputs.get(match["key"], [])
                value = artifacts[0].get("metadata", {}).get(match["field"]) if artifacts else None
                if value is None:
                    missing = True
                    return ""
                return str(value)

            text = re.sub(
                r"\{\{\$\.inputs\.artifacts\['(?P<key>[^']+)'\]\.metadata\['(?P<field>[^']+)'\]\}\}",
                fill,
                text,
            )
            live = [a for a in self.store.artifacts if a["state"] == "LIVE"]
            resolved[key] = [] if missing else filters.select(live, text, query.get("limit") or 1)
        return resolved

    # Container tasks.

    def caching(self, name: str) -> bool:
        """The task's compiled caching, unless the launch overrides every task's."""
        if self.enable_cache is not None:
            return self.enable_cache
        return bool(self.tasks[name].get("cachingOptions", {}).get("enableCache", False))

    def run_container(self, name: str, prefix: str, container: dict, inputs) -> tuple:
        component = self.components[self.tasks[name]["componentRef"]["name"]]
        task_root = self.shape.task_root(name)
        pod = os.path.join(self.pods_dir, f"{name}-{uuid.uuid4().hex[:8]}")
        told = self.shape.output_file(task_root, "/" if self.image else pod)
        # Where the launcher reads it: the pod's disk is the folder `pod`, mounted at / inside.
        kubeflow_in_image = self.image and self.target == "kubeflow"
        output_file = os.path.join(pod, told.lstrip("/")) if kubeflow_in_image else told
        os.makedirs(task_root, exist_ok=True)
        output_defs = component.get("outputDefinitions", {}).get("artifacts", {})
        outputs = self.new_outputs(name, task_root, output_defs)
        parameters = self.parameter_values(name)
        executor_input = self.executor_input(inputs, parameters, outputs, told)
        log_file = os.path.join(self.log_dir, f"{name}.log")
        mounts = {os.path.join(pod, "gcs"): "/gcs"} if kubeflow_in_image else {}
        check = container.get("lifecycle", {}).get("preCacheCheck")
        if check:  # TFX's ExampleGen driver: span, version and a fingerprint of the data
            self.execute(
                check["command"], check.get("args", []), executor_input, log_file, prefix, mounts
            )
            driven = self.read_output(output_file)
            parameters.update(driven.get("parameterValues", {}))
            for key, listed in driven.get("artifacts", {}).items():
                for artifact, written in zip(outputs.get(key, []), listed.get("artifacts", [])):
                    artifact["metadata"] = {**artifact["metadata"], **written.get("metadata", {})}
            executor_input = self.executor_input(inputs, parameters, outputs, told)
        cache_key = self.cache_key(name, inputs, parameters, output_defs)
        hit = self.store.cached(cache_key) if self.caching(name) else None
        if hit is not None:
            return self.answered_by_cache(name, outputs, cache_key, hit)
        self.outputs[name] = outputs
        execution = self.store.record_execution(
            job=self.job_name,
            task=name,
            cache_key=cache_key,
            state="running",
            outputs={key: [a["name"] for a in listed] for key, listed in outputs.items()},
        )
        self.store.save()
        self.write(f"{prefix} ...")
        try:
            self.execute(
                container["command"],
                container.get("args", []),
                executor_input,
                log_file,
                prefix,
                mounts,
            )
            written = self.read_output(output_file).get("artifacts", {})
        except Exception:
            execution["state"] = "failed"
            raise
        finally:
            shutil.rmtree(pod, ignore_errors=True)  # the pod's own disk goes with it
        for key, listed in outputs.items():
            metadata = {}
            for artifact in written.get(key, {}).get("artifacts", [])[:1]:
                metadata = artifact.get("metadata", {})
            for artifact in listed:
                self.store.publish(artifact["name"], {**artifact["metadata"], **metadata})
        execution["state"] = "succeeded"
        return "succeeded", ""

    def new_outputs(self, name: str, task_root: str, output_defs: dict) -> dict:
        """The task's output artifacts, by key, as the orchestrator registers them before the
        task runs (one each)."""
        return {
            key: [
                self.store.new_artifact(
                    schema_title(spec["artifactType"]["instanceSchema"]),
                    spec["artifactType"]["instanceSchema"],
                    self.shape.output_uri(task_root, key),
                    pipeline=self.pipeline_name,
                    job=self.job_name,
                    task=name,
                    output_key=key,
                    contexts=[self.pipeline_name, self.job_name],
                )
            ]
            for key, spec in sorted(output_defs.items())
        }

    def answered_by_cache(self, name: str, outputs: dict, cache_key: str, hit: dict) -> tuple:
        """The task's outputs are the cached execution's; its own new ones were never
        written."""
        for artifacts in outputs.values():
            for artifact in artifacts:
                artifact["state"] = "ABANDONED"  # never written: the cache answered
        self.outputs[name] = {
            key: [self.store.artifact(n) for n in names] for key, names in hit["outputs"].items()
        }
        self.store.record_execution(
            job=self.job_name,
            task=name,
            cache_key=cache_key,
            state="cached",
            outputs=hit["outputs"],
            cached_from=hit["job"],
        )
        return "cached", f" (job {hit['job']} ran it with the same inputs)"

    def executor_input(self, inputs, parameters, outputs, output_file) -> dict:
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
                    key: {"artifacts": [self.shape.output_artifact(a, key) for a in listed]}
                    for key, listed in outputs.items()
                },
                "outputFile": output_file,
            },
        }

    def cache_key(self, name, inputs, parameters, output_defs) -> str:
        """What Kubeflow Pipelines hashes for a task's cache key: the input artifacts' names,
        the parameter values, the outputs' types, the container's image, command and
        arguments (as compiled)."""
        container = self.executor_of(name, compiled=True).get("container", {})
        fingerprint = {
            "inputs": {k: [a["name"] for a in v] for k, v in sorted(inputs.items())},
            "parameters": parameters,
            "outputs": {k: v["artifactType"]["instanceSchema"] for k, v in output_defs.items()},
            "image": container.get("image"),
            "command": container.get("command"),
            "args": container.get("args"),
        }
        text = json.dumps(fingerprint, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def command_line(self, command: List[str], args: List[str], executor_input: dict) -> List[str]:
        """The task's command line as it runs here: the ExecutorInput for `{{$}}`, the local
        runner for Dataflow, and a Vertex AI training job's client that sends its job to the
        launch's job service (training_jobs.py, job_service.py)."""
        serialized = json.dumps(executor_input, sort_keys=True)
        line = [serialized if part == EXECUTOR_INPUT else part for part in [*command, *args]]
        if DATAFLOW in line:
            at = line.index(DATAFLOW)
            line[at : at + 1] = LOCAL_BEAM
        if any(part.startswith(CLOUD_TRAINING) for part in line) and line[1:2] == ["-m"]:
            service = getattr(self, "jobs", None)
            url = service.url if service else "http://127.0.0.1:0"
            line[1:1] = ["-m", "pipeline.launch.training_jobs", "--service", url]
        if not self.image:
            line = LocalRunner.local(line)
        return line

    def execute(
        self, command, args, executor_input, log_file: str, prefix: str, mounts=None
    ) -> None:
        """Runs one command line to its end, its output appended to `log_file`; the Trainer's
        progress lines are shown under the task's line; a failure raises with the log's end."""
        line = self.command_line(command, args, executor_input)
        with open(log_file, "ab") as log:
            log.write(f"$ {' '.join(line[:4])} ...\n".encode())
        stop = threading.Event()
        follower = threading.Thread(target=self.follow, args=(log_file, stop, prefix))
        follower.start()
        self.jobs.log_file = log_file
        try:
            code = self.runner.run(line, log_file, mounts=mounts)
        finally:
            stop.set()
            follower.join()
        if code != 0:
            with open(log_file, errors="replace") as f:
                reason = failure_reason(f.readlines()[-LOG_TAIL_LINES:], code)
            raise RuntimeError(f"{reason} (its log: {log_file})")

    def follow(self, log_file: str, stop: threading.Event, prefix: str) -> None:
        """Shows the progress lines the task logs, and its elapsed time when it says nothing
        for PROGRESS_TICK_SECONDS."""
        started = said = time.monotonic()
        # The last lines shown: the replicas of a training job log the same ones.
        shown: List[str] = []
        with open(log_file, errors="replace") as f:
            f.seek(0, os.SEEK_END)
            while not stop.wait(0.5):
                for text in f.readlines():
                    match = PROGRESS_LINE.search(text.rstrip())
                    if match and match.group(1) not in shown:
                        self.write(f"    {match.group(1)}")
                        shown = [match.group(1), *shown[:3]]
                        said = time.monotonic()
                if time.monotonic() - said >= configs.PROGRESS_TICK_SECONDS:
                    said = time.monotonic()
                    from trainer_module.training.progress import duration

                    self.write(f"{prefix} ... {duration(said - started)}")

    @staticmethod
    def read_output(output_file: str) -> dict:
        if not os.path.exists(output_file):
            return {}
        with open(output_file) as f:
            return json.load(f)
