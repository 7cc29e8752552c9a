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

import contextlib
import dataclasses
import json
import os
import shutil
import sys
import time
import uuid
from typing import Dict, List, Mapping, Optional, TextIO

from pipeline import configs
from pipeline.launch.cache import TaskCache
from pipeline.launch.execution import DATAFLOW, TaskProcesses, read_output
from pipeline.launch.gcs import GcsEmulator
from pipeline.launch.job import CompiledJob, LaunchError
from pipeline.launch.job_service import JobService
from pipeline.launch.kfp_launcher import KfpLauncher
from pipeline.launch.runners import ImageRunner, LocalRunner
from pipeline.launch.shapes import (
    EXECUTOR_LOGS,
    LEGACY_OUTPUT_FILE,
    NEWEST_KFP,
    KubeflowShape,
)
from pipeline.launch.store import Store

__all__ = ["Launch", "LaunchError"]


class Launch:
    """One launch of a compiled job (see the module's docstring); `run()` returns the summary
    and prints progress lines to `stream`. Its parts, by role: `job` (job.py: the job as the
    target hands it to a task), `cache` (cache.py: the cache and the recorded artifacts), the
    task processes (execution.py), the summary (summary.py).

    `image`: run every task inside this image (runners.ImageRunner) rather than here.
    `enable_cache`: None keeps each task's compiled caching, as `submit` does; True or False
    overrides every task's, as the SDKs' `enable_caching` does. `job_env`: variables set in
    every task's environment, as the job's container env would be. `secrets`: "SECRET/KEY" ->
    value of the Kubernetes secrets the kubeflow target's pods take variables from (its
    platform spec says which pod takes which). `gcs_emulator`: gs:// paths
    stay gs://, on a Cloud Storage emulator on loopback (gcs.py) over OUTPUT/launch/gcs, which
    every client of every task speaks to through GCS's API; the files under OUTPUT/gs/BUCKET/
    are copied into its BUCKET first."""

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
        kfp_version: Optional[str] = None,
        gcs_emulator: bool = False,
        secrets: Optional[Mapping[str, str]] = None,
    ):
        with open(job_path) as f:
            compiled = json.load(f)
        self.output = os.path.abspath(output)
        self.job = CompiledJob(
            compiled,
            self.output,
            target,
            parameters,
            in_image=bool(image),
            kfp_version=kfp_version,
            gcs=gcs_emulator,
        )
        self.emulator: Optional[GcsEmulator] = None
        self.secrets = dict(secrets or {})
        # What each pod gets from the cluster's secrets: checked before anything runs.
        self.pod_environments = {
            name: self.job.pod_environment(name, self.secrets) for name in self.job.order()
        }
        self.stream = stream or sys.stderr
        self.fresh_processes = fresh_processes
        self.image = image
        self.job_env = dict(job_env or {})
        self.environment = dict(os.environ if environment is None else environment)
        self.store = Store(os.path.join(self.output, "launch"))
        self.cache = TaskCache(self.store, self.job, enable_cache)
        self.log_dir = os.path.join(self.output, "launch", "logs", self.job.job_name)
        # Each task's own disk (a pod's /gcs/ on the kubeflow target), removed with the task.
        self.pods_dir = os.path.join(self.output, "launch", "pods", self.job.job_name)
        self.outputs: Dict[str, Dict[str, List[dict]]] = {}  # task -> key -> artifacts
        self.inputs: Dict[str, Dict[str, List[dict]]] = {}
        self.states: Dict[str, dict] = {}
        self.notes: List[str] = []
        self.processes: Optional[TaskProcesses] = None

    def run(self) -> dict:
        started = time.monotonic()
        os.makedirs(self.log_dir, exist_ok=True)
        from pipeline.launch.summary import summarize

        with self.store.locked(), self.storage():
            with self.started():
                failed = self.run_tasks(self.job.order())
            summary = summarize(self, failed)
        summary["wall_seconds"] = round(time.monotonic() - started, 2)
        return summary

    @contextlib.contextmanager
    def storage(self):
        """With `gcs_emulator`: the emulator (one already serving OUTPUT/launch/gcs, else one
        started for the launch), the bucket folders copied in, and this process (its reads of
        the tasks' outputs) pointed at it while inside."""
        if not self.job.gcs:
            yield
            return
        folder = os.path.join(self.output, "launch", "gcs")
        attached = GcsEmulator.attach(folder)
        self.emulator = attached or GcsEmulator(folder).start()
        saved = dict(os.environ)
        try:
            os.environ.update(self.emulator.environment())
            for bucket in (
                sorted(os.listdir(self.job.bucket)) if os.path.isdir(self.job.bucket) else []
            ):
                copied = self.emulator.upload_tree(
                    os.path.join(self.job.bucket, bucket), f"gs://{bucket}"
                )
                if copied:
                    self.note(
                        f"copied {copied} files from {self.job.bucket}/{bucket} to gs://{bucket}"
                    )
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)
            if not attached:
                self.emulator.close()

    def task_environment(self) -> Dict[str, str]:
        """What every task's environment gets beyond the image's: the job's, and the
        emulator's when there is one."""
        return {**self.job_env, **(self.emulator.environment() if self.emulator else {})}

    @contextlib.contextmanager
    def started(self, runner=None):
        """The task processes (in the image, or here) and the job service open while inside;
        `runner`: another runner than the launch's own."""
        if runner is None and self.image:
            # The bucket's folder, or the emulator's client files (its CA, the credentials).
            shared = self.emulator.client_folder if self.emulator else self.job.bucket
            runner = ImageRunner(self.image, shared, self.pods_dir, self.task_environment())
        elif runner is None:
            runner = LocalRunner(
                {**self.environment, **self.task_environment()},
                os.path.join(self.log_dir, "forkserver.log"),
                fresh=self.fresh_processes,
            )
        self.processes = TaskProcesses(runner, JobService(runner), self.write, bool(self.image))
        try:
            self.say_what_changes()
            yield self.processes
        finally:
            self.processes.close()
            self.processes = None

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
        job = self.job
        assert self.processes is not None
        where = (
            f"objects in a Cloud Storage emulator on {self.emulator.url}, through GCS's API"
            if self.emulator
            else f"folders under {job.bucket}"
        )
        self.write(
            f"launching {job.pipeline_name} as {job.target} would run it, as job "
            f"{job.job_name}, {self.processes.runner.describe()}; gs:// paths are {where}"
        )
        self.say_what_pods_get()
        if isinstance(job.shape, KubeflowShape):
            backend = job.shape.backend
            self.note(
                f"inputs as a Kubeflow Pipelines {backend.name} backend hands them: MLMD ids for "
                f"names, no types, the executor output on the pod's disk"
                + (
                    ", an executor-logs output the job does not declare"
                    if backend.adds_executor_logs
                    else ""
                )
                + ("" if backend.fills_job_placeholders else ", job placeholders left as compiled")
            )
            if backend.newer_than_read:
                self.note(
                    f"Kubeflow Pipelines {backend.name} is newer than {NEWEST_KFP}, the "
                    f"newest release read: its tasks get {NEWEST_KFP}'s input shape"
                )
        if any(DATAFLOW in job.executor_args(name) for name in job.tasks):
            self.note(
                "Beam steps compiled for Dataflow run on the local runner "
                f"({configs.LOCAL_BEAM_RUNNER}, in memory), their other options kept"
            )
        enable = self.cache.enable_cache
        if enable is not None:
            self.note(
                f"caching {'on' if enable else 'off'} for every task, as "
                f"submit --{'cache' if enable else 'no-cache'} would set it"
            )
        data_dir = job.parameters.get("data_dir")
        if isinstance(data_dir, str) and job.gcs and not data_dir.startswith("gs://"):
            self.note(
                f"data_dir {data_dir} is not in a bucket: with the emulator a task reads "
                f"gs:// paths (copy the data under {job.bucket}/BUCKET/..., which a launch "
                "copies into the emulator, and pass --param data_dir=gs://BUCKET/...)"
            )
        elif job.gcs:
            pass
        elif isinstance(data_dir, str) and self.image and not data_dir.startswith(job.bucket):
            self.note(
                f"data_dir {data_dir} is not in the bucket: a task in the image sees only the "
                "image and the bucket (copy the data under "
                f"{job.bucket}/BUCKET/... and pass --param data_dir=gs://BUCKET/...)"
            )
        elif isinstance(data_dir, str) and not self.image and not os.path.exists(data_dir):
            self.note(f"data_dir {data_dir} does not exist here: pass --param data_dir=PATH")

    def say_what_pods_get(self) -> None:
        """The kubeflow target's pods: which variables come from secrets, where the Trainer's
        pod would be scheduled; what --env and --secret give that no pod would get."""
        from pipeline.kubeflow_runner import PLATFORM_SPEC

        platform = self.job.compiled.get(PLATFORM_SPEC, {})
        given = {v for env in self.pod_environments.values() for v in env}
        if given:
            self.note(
                f"variables from the cluster's secrets, as the pods get them: {sorted(given)}"
            )
        used = {f"{s}/{k}" for name in self.job.tasks for s, k, _ in self.job.pod_secrets(name)}
        unused = sorted(set(self.secrets) - used)
        if unused:
            self.note(f"--secret {', '.join(unused)}: no pod of the job takes it")
        if self.job.target == "kubeflow" and self.job_env:
            self.note(
                f"--env {', '.join(sorted(self.job_env))}: a variable no pod of the compiled job "
                "gets (its pods get what its platform spec gives them: KUBERNETES_SECRET_ENV)"
            )
        executors = platform.get("platforms", {}).get("kubernetes", {}).get("deploymentSpec", {})
        for label, config in sorted(executors.get("executors", {}).items()):
            where = []
            if config.get("nodeSelector"):
                where.append(f"on nodes labelled {config['nodeSelector'].get('labels')}")
            if config.get("tolerations"):
                where.append(f"tolerating {[t.get('key') for t in config['tolerations']]}")
            if where:
                self.note(
                    f"{label}'s pod would be scheduled {' and '.join(where)}; here it runs "
                    "on this machine"
                )
                shape = self.job.shape
                if (
                    config.get("tolerations")
                    and isinstance(shape, KubeflowShape)
                    and shape.backend.version < (2, 1, 0)
                ):
                    self.note(
                        f"Kubeflow Pipelines {shape.backend.name} ignores tolerations (2.1 on)"
                    )

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.write(f"note: {text}")

    def write(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    # One task.

    def run_task(self, name: str, prefix: str) -> tuple:
        """(state, what to add to its line) of one task, run."""
        executor = self.job.executor_of(name)
        inputs = self.job.input_artifacts(name, self.outputs)
        self.inputs[name] = inputs
        if "resolver" in executor:
            self.outputs[name] = self.cache.resolve(executor["resolver"], inputs)
            found = sum(len(v) for v in self.outputs[name].values())
            return "succeeded", f" (resolved {found} artifact{'' if found == 1 else 's'})"
        return self.run_container(name, prefix, executor["container"], inputs)

    def run_container(self, name: str, prefix: str, container: dict, inputs) -> tuple:
        """A container task: its pre-cache check, then the cache's answer or its run."""
        job = self.job
        task_root = job.shape.task_root(name)
        pod = os.path.join(self.pods_dir, f"{name}-{uuid.uuid4().hex[:8]}")
        told = job.shape.output_file(task_root, "/" if self.image else pod)
        # Where the launcher reads it: the pod's disk is the folder `pod`, its /gcs/ (and the
        # legacy output file's folder) mounted inside.
        kubeflow_in_image = self.image and job.target == "kubeflow"
        output_file = os.path.join(pod, told.lstrip("/")) if kubeflow_in_image else told
        mounts = {}
        if kubeflow_in_image:
            legacy = os.path.dirname(LEGACY_OUTPUT_FILE)
            mounts = {os.path.join(pod, "gcs"): "/gcs", os.path.join(pod, legacy[1:]): legacy}
        if not task_root.startswith("gs://"):
            os.makedirs(task_root, exist_ok=True)
        task = _Task(
            prefix,
            os.path.join(self.log_dir, f"{name}.log"),
            mounts,
            output_file,
            self.pod_environments.get(name, {}),
        )
        outputs = self.cache.new_outputs(name, task_root)
        parameters = job.parameter_values(name)
        executor_input = job.executor_input(inputs, parameters, outputs, told, task_root)
        check = container.get("lifecycle", {}).get("preCacheCheck")
        if check:  # TFX's ExampleGen driver: span, version and a fingerprint of the data
            self.pre_cache_check(task, check, executor_input, parameters, outputs)
            executor_input = job.executor_input(inputs, parameters, outputs, told, task_root)
        cache_key = self.cache.key(name, inputs, parameters)
        hit = self.cache.hit(name, cache_key)
        if hit is not None:
            self.outputs[name] = self.cache.answer(name, outputs, cache_key, hit)
            return "cached", f" (job {hit['job']} ran it with the same inputs)"
        self.outputs[name] = outputs
        execution = self.store.record_execution(
            job=job.job_name,
            task=name,
            cache_key=cache_key,
            state="running",
            outputs={key: [a["name"] for a in listed] for key, listed in outputs.items()},
        )
        self.store.save()
        self.write(f"{prefix} ...")
        launcher = self.kfp_launcher(pod)
        try:
            succeeded = False
            try:
                if launcher:
                    launcher.download_inputs(executor_input, task.log_file)
                self.execute(task, container, executor_input)
                succeeded = True
            finally:
                if launcher:
                    launcher.upload_outputs(executor_input, task.log_file, succeeded)
                else:
                    self.keep_logs(task, executor_input)
            written = self.read_output(task.output_file).get("artifacts", {})
        except Exception:
            execution["state"] = "failed"
            raise
        finally:
            shutil.rmtree(pod, ignore_errors=True)  # the pod's own disk goes with it
        self.publish(outputs, written)
        execution["state"] = "succeeded"
        return "succeeded", ""

    def pre_cache_check(self, task: "_Task", check: dict, executor_input, parameters, outputs):
        """Runs the task's pre-cache check; what it drove (span, version, fingerprint) goes
        into `parameters` and the outputs' metadata."""
        self.execute(task, check, executor_input)
        driven = self.read_output(task.output_file)
        parameters.update(driven.get("parameterValues", {}))
        for key, listed in driven.get("artifacts", {}).items():
            for artifact, written in zip(outputs.get(key, []), listed.get("artifacts", [])):
                artifact["metadata"] = {**artifact["metadata"], **written.get("metadata", {})}

    def execute(self, task: "_Task", spec: dict, executor_input: dict) -> None:
        """`spec`'s command and args run to their end (execution.TaskProcesses)."""
        assert self.processes is not None, "run tasks inside Launch.started()"
        self.processes.execute(
            spec["command"],
            spec.get("args", []),
            executor_input,
            task.log_file,
            task.prefix,
            task.mounts,
            task.env,
        )

    def kfp_launcher(self, pod: str) -> Optional[KfpLauncher]:
        """Kubeflow's launcher around a task, on Cloud Storage (the emulator): downloads its
        inputs into the pod, uploads its outputs and log after; None elsewhere."""
        if self.emulator is None or not isinstance(self.job.shape, KubeflowShape):
            return None
        return KfpLauncher(self.emulator.client(), self.job.shape, pod)

    def read_output(self, path: str) -> dict:
        """The ExecutorOutput a task wrote ({} where it wrote none), on the pod's disk or in
        the bucket."""
        if not path.startswith("gs://"):
            return read_output(path)
        assert self.emulator is not None
        bucket, _, key = path[len("gs://") :].partition("/")
        blob = self.emulator.client().bucket(bucket).get_blob(key)
        return json.loads(blob.download_as_bytes()) if blob is not None else {}

    def keep_logs(self, task: "_Task", executor_input: dict) -> None:
        """What the Kubeflow launcher does with the `executor-logs` output (from 2.5), where gs://
        is a folder: the task's log, written to its URI, whether the task succeeded or not."""
        logs = executor_input["outputs"]["artifacts"].get(EXECUTOR_LOGS, {})
        for artifact in logs.get("artifacts", []):
            os.makedirs(os.path.dirname(artifact["uri"]), exist_ok=True)
            shutil.copyfile(task.log_file, artifact["uri"])

    def publish(self, outputs: Dict[str, List[dict]], written: dict) -> None:
        """The task's outputs recorded LIVE, with the metadata its ExecutorOutput gave."""
        for key, listed in outputs.items():
            metadata = {}
            for artifact in written.get(key, {}).get("artifacts", [])[:1]:
                metadata = artifact.get("metadata", {})
            for artifact in listed:
                self.store.publish(artifact["name"], {**artifact["metadata"], **metadata})


@dataclasses.dataclass(frozen=True)
class _Task:
    """One container task's run: what its lines start with, where it logs, what its pod
    mounts, where the launcher reads its ExecutorOutput, what its pod's environment adds."""

    prefix: str
    log_file: str
    mounts: dict
    output_file: str
    env: dict  # what its pod gets beyond every task's (the cluster's secrets)
