"""What the pipeline image must hold, checked where it runs: every module a compiled job names.

The image's build runs `python -m pipeline.image_check` (kubeflow/Dockerfile), and a test runs
the same check here. It compiles the jobs every task and family makes (both targets, the Trainer
as a Vertex AI training job and inside its step, tuning, bulk inference) into a scratch folder,
and imports what each names, as the container would when the job runs:

- the module of every container command (`python -m MODULE`: TFX's KFP v2 entrypoint, the
  project's Kubeflow entrypoint, the ExampleGen driver of a pre-cache check);
- every `--executor_class_path`;
- every artifact type, through TFX's own helper (the entrypoint imports each type's title);
- every project function a parameter names (a family's `run_fn`, `preprocessing_fn`,
  `tuner_fn`, the Evaluator's module), and what the Vertex AI training job's replicas start
  (`tfx.scripts.run_executor`).

It then starts a Beam SDK worker through the image's boot binary (/opt/apache/beam/boot, the
ENTRYPOINT: what Dataflow and a portable runner's worker pool run), as a worker pool with that
executable does, and runs a small pipeline on it (`beam_worker`).
"""

import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Dict, Iterator, List, Set, Tuple

# A project import path inside a parameter's value ("trainer_module.vit.training.run_fn").
PROJECT_PATH = re.compile(
    r"\b(?:trainer_module|components|pipeline|tfx_transformers)(?:\.[A-Za-z_][A-Za-z0-9_]*)+"
)
# What a Vertex AI training job's replicas run (TFX's Google Cloud extension builds it).
TRAINING_REPLICA_MODULES = ("tfx.scripts.run_executor",)
# Where Beam's SDK image keeps its boot binary (and the stand-in base: scripts/image_base.sh).
BOOT = "/opt/apache/beam/boot"
BEAM_WORKER_SECONDS = 120
CLOUD = {
    "GOOGLE_CLOUD_PROJECT": "image-check",
    "PIPELINE_ROOT": "gs://image-check/root",
    "PIPELINE_IMAGE": "image-check",
    "MODEL_REGISTRY": "mlflow",
    "MLFLOW_TRACKING_URI": "http://mlflow.invalid:5000",
}


def instance_schemas(value) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "instanceSchema":
                yield inner
            else:
                yield from instance_schemas(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from instance_schemas(inner)


def named_by(job: dict) -> Dict[str, Set[str]]:
    """{"modules", "classes", "types", "functions"}: the import paths `job` names."""
    spec = job["pipelineSpec"]
    names: Dict[str, Set[str]] = {k: set() for k in ("modules", "classes", "types", "functions")}
    for executor in spec["deploymentSpec"]["executors"].values():
        container = executor.get("container")
        if not container:
            continue
        commands = [container.get("command", []) + container.get("args", [])]
        check = container.get("lifecycle", {}).get("preCacheCheck")
        if check:
            commands.append(check.get("command", []) + check.get("args", []))
        for line in commands:
            for at, part in enumerate(line[:-1]):
                if part == "-m":
                    names["modules"].add(line[at + 1])
                elif part == "--executor_class_path":
                    names["classes"].add(line[at + 1])
    names["types"] = set(instance_schemas(job))
    for task in spec["root"]["dag"]["tasks"].values():
        for parameter in task.get("inputs", {}).get("parameters", {}).values():
            constant = parameter.get("runtimeValue", {}).get("constant")
            if isinstance(constant, str):
                names["functions"].update(PROJECT_PATH.findall(constant))
            if isinstance(constant, str) and "ai_platform_training_args" in constant:
                names["modules"].update(TRAINING_REPLICA_MODULES)
    return names


def compiled_jobs(folder: str) -> Iterator[Tuple[str, dict]]:
    """(description, job) of every job shape the project compiles."""
    from pipeline.cloud import CloudConfig
    from pipeline.factory import create_inference_pipeline
    from pipeline.kubeflow_runner import build_cloud_pipeline, compile_pipeline
    from pipeline.options import PipelineOptions
    from pipeline.tasks import TASKS

    shapes: List[Tuple[str, dict, dict]] = []
    for task in sorted(TASKS):
        for model in TASKS[task].model_families:
            shapes.append((task, {"model": model}, {}))
    shapes += [
        ("translation", {"tune": True, "tuner_trials": 2}, {}),
        ("imdb", {}, {"VERTEX_TRAINING": "0", "BEAM_RUNNER": "direct"}),
    ]
    count = 0
    for task, options, environ in shapes:
        data = f"gs://image-check/data/{task}"
        for target in ("vertex", "kubeflow"):
            cloud = CloudConfig.from_environment({**CLOUD, **environ}, target=target)
            pipeline = build_cloud_pipeline(PipelineOptions(task=task, data=data, **options), cloud)
            count += 1
            path = f"{folder}/job-{count}.json"
            yield (
                f"{task} {options or ''} {environ or ''} --target {target}".replace("  ", " "),
                compile_pipeline(pipeline, cloud, path),
            )
    cloud = CloudConfig.from_environment(CLOUD)
    inference = create_inference_pipeline(
        PipelineOptions(task="cifar10").resolve(),
        pipeline_root="gs://image-check/root/pipelines/infer",
        data_dir="gs://image-check/inputs",
    )
    yield "cifar10 bulk inference", compile_pipeline(inference, cloud, f"{folder}/infer.json")


def import_path(path: str):
    """The module or attribute `path` names: its longest importable module, then attributes."""
    import importlib

    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as error:
            if error.name and not ".".join(parts[:cut]).startswith(error.name):
                raise  # the module exists; something it imports does not
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise ModuleNotFoundError(f"no module in {path}")


def check(names: Dict[str, Set[str]]) -> List[str]:
    """Imports everything in `names` (named_by's); returns the failures, one line each."""
    from kfp.pipeline_spec import pipeline_spec_pb2
    from tfx.orchestration.kubeflow.v2.container import kubeflow_v2_entrypoint_utils as utils
    from tfx.utils import import_utils

    failures = []

    def attempt(kind: str, path: str, load) -> None:
        try:
            load(path)
        except Exception as error:  # reported, with what failed
            failures.append(f"{kind} {path}: {type(error).__name__}: {error}")

    for module in sorted(names["modules"]):
        attempt("module", module, import_path)
    for path in sorted(names["classes"]):
        attempt("executor", path, import_utils.import_class_by_path)
    for schema in sorted(names["types"]):
        type_schema = pipeline_spec_pb2.ArtifactTypeSchema(instance_schema=schema)
        path = utils._retrieve_class_path(type_schema)
        attempt("artifact type", path, import_utils.import_class_by_path)
    for path in sorted(names["functions"]):
        attempt("function", path, import_path)
    return failures


def beam_worker(boot: str) -> dict:
    """A pipeline run on an SDK worker started through `boot`: Beam's worker pool (as `boot
    --worker_pool` starts it) asked for a worker by the portable runner starts `boot --id ...
    --provision_endpoint ...`, which fetches the job's options and artifacts and starts the
    SDK harness. {"squares": what the pipeline computed, "worker_parent": the executable of
    the process that started the worker's}."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer

    address, server = BeamFnExternalWorkerPoolServicer.start(
        use_process=True, port=0, container_executable=boot
    )
    options = PipelineOptions(
        runner="PortableRunner",
        job_endpoint="embed",
        environment_type="EXTERNAL",
        environment_config=address,
    )
    with tempfile.TemporaryDirectory() as folder:
        try:
            with beam.Pipeline(options=options) as pipeline:
                _ = (
                    pipeline
                    | beam.Create([1, 2, 3])
                    | beam.Map(worker_square)
                    | beam.io.WriteToText(os.path.join(folder, "out"), shard_name_template="")
                )
        finally:
            server.stop(0)
        with open(os.path.join(folder, "out")) as f:
            rows = [json.loads(line) for line in f]
    return {
        "squares": sorted(row["square"] for row in rows),
        "worker_parent": sorted({row["parent"] for row in rows}),
    }


def worker_square(x: int) -> str:
    """x squared, and the executable of the worker's parent process (boot, when it started it)."""
    return json.dumps({"square": x * x, "parent": os.readlink(f"/proc/{os.getppid()}/exe")})


def check_beam_worker(boot: str = BOOT) -> List[str]:
    """`beam_worker(boot)` in a process of its own, within BEAM_WORKER_SECONDS; what failed."""
    if not os.access(boot, os.X_OK):
        return [
            f"no Beam boot binary at {boot}: Dataflow and the portable runners start their "
            "workers through it"
        ]
    # In a folder of its own: boot writes the job's options to pipeline_options.json where it
    # starts.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    try:
        with tempfile.TemporaryDirectory() as folder:
            ran = subprocess.run(
                [sys.executable, "-m", "pipeline.image_check", "--beam-worker", boot],
                capture_output=True,
                text=True,
                timeout=BEAM_WORKER_SECONDS,
                cwd=folder,
                env={**os.environ, "PYTHONPATH": path},
            )
    except subprocess.TimeoutExpired:
        return [f"beam worker through {boot}: no result in {BEAM_WORKER_SECONDS} s"]
    lines = ran.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if ran.returncode == 0 and lines else {}
    if result.get("squares") != [1, 4, 9] or result.get("worker_parent") != [
        os.path.realpath(boot)
    ]:
        return [f"beam worker through {boot}: {result or ran.stderr[-2000:]}"]
    return []


def main() -> int:
    if sys.argv[1:2] == ["--beam-worker"]:
        print(json.dumps(beam_worker(sys.argv[2])))
        return 0
    names: Dict[str, Set[str]] = {k: set() for k in ("modules", "classes", "types", "functions")}
    with tempfile.TemporaryDirectory() as folder:
        jobs = 0
        for _, job in compiled_jobs(folder):
            jobs += 1
            for kind, found in named_by(job).items():
                names[kind] |= found
    failures = check(names) + check_beam_worker()
    counts = ", ".join(f"{len(v)} {k}" for k, v in names.items())
    print(
        json.dumps(
            {"jobs": jobs, "imported": counts, "beam_worker_through": BOOT, "failures": failures}
        )
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
