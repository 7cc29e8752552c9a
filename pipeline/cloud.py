"""Where a Kubeflow Pipelines / Vertex AI run lives: one home for its settings, read from the
environment, and what they become (paths, Beam's Dataflow arguments, Vertex AI training jobs).

Required: GOOGLE_CLOUD_PROJECT, PIPELINE_ROOT (gs://...), PIPELINE_IMAGE. Everything else has a
default; see ENVIRONMENT and CloudConfig. What the pipeline runs (task, model, steps...) is the
options object's (pipeline/options.py, TFXT_* variables), as for local runs.
"""

import dataclasses
import math
import os
import re
from typing import Any, Callable, Dict, Mapping, Optional

from pipeline import configs
from pipeline.configs import flag

# Environment variable -> the CloudConfig field it sets (its default there; none: required).
ENVIRONMENT = {
    "GOOGLE_CLOUD_PROJECT": "project",
    "GOOGLE_CLOUD_REGION": "region",
    "PIPELINE_ROOT": "root",
    "PIPELINE_IMAGE": "image",
    "DATA_ROOT": "data_root",
    "TRAINER_MACHINE_TYPE": "machine_type",
    "TRAINER_ACCELERATOR_TYPE": "accelerator_type",
    "TRAINER_ACCELERATOR_COUNT": "accelerator_count",
    "TRAINER_REPLICA_COUNT": "replica_count",
    "VERTEX_TRAINING": "vertex_training",
    "BEAM_RUNNER": "beam_runner",
    "DATAFLOW_MACHINE_TYPE": "dataflow_machine_type",
    "DATAFLOW_IMAGE": "dataflow_image",
    "DATAFLOW_MAX_WORKERS": "dataflow_max_workers",
    "MODEL_REGISTRY": "registry",
    "VERTEX_PARENT_MODEL": "parent_model",
    "MLFLOW_TRACKING_URI": "mlflow_tracking_uri",
    "TRAINING_SERVICE_ACCOUNT": "training_service_account",
    "DATAFLOW_SERVICE_ACCOUNT": "dataflow_service_account",
    "BEAM_JOB_ENDPOINT": "beam_job_endpoint",
    "BEAM_WORKER_POOL": "beam_worker_pool",
    "FLINK_PARALLELISM": "flink_parallelism",
    "BEAM_STEP_CPU": "beam_step_cpu",
    "BEAM_STEP_MEMORY": "beam_step_memory",
    "TRAINER_STEP_CPU": "trainer_step_cpu",
    "TRAINER_STEP_MEMORY": "trainer_step_memory",
    "KUBERNETES_SECRET_ENV": "secret_env",
    "KUBERNETES_SERVICE_ACCOUNT": "kubernetes_service_account",
    "TRAINER_NODE_SELECTOR": "trainer_node_selector",
    "TRAINER_TOLERATIONS": "trainer_tolerations",
}
# The settings of the kubeflow target's pods (its Kubernetes platform spec: pipeline/pods.py).
KUBERNETES_SETTINGS = (
    "KUBERNETES_SECRET_ENV",
    "KUBERNETES_SERVICE_ACCOUNT",
    "TRAINER_NODE_SELECTOR",
    "TRAINER_TOLERATIONS",
)
BEAM_RUNNERS = ("dataflow", "direct", "portable", "flink", "spark")
# Beam's runner classes of the portable runners: a job server on the cluster (BEAM_JOB_ENDPOINT)
# runs the pipeline, its SDK workers in a worker pool running the pipeline image.
PORTABLE_RUNNERS = {"portable": "PortableRunner", "flink": "FlinkRunner", "spark": "SparkRunner"}
# Where the portable runners' SDK workers are by default: a worker pool beside the job's
# Flink task managers or Spark executors (Beam's `worker_pool_main` in the pipeline image).
DEFAULT_WORKER_POOL = "localhost:50000"
# How long a portable runner keeps an idle SDK worker for the job's next stage (Beam's default,
# 0, starts a worker per stage: on Flink the IMDB Transform started eleven, each importing
# TensorFlow and TFX again).
ENVIRONMENT_CACHE_MILLIS = 60_000
# What each engine's runner needs besides: Flink exchanges a batch job's data between stages
# pipelined by default, and a job whose branches meet again (Transform: its analyzers' results
# feed the transform of the same records) can block for good once the data outgrows the network
# buffers (FLINK-10672): each stage's output is written out first.
ENGINE_OPTIONS = {"flink": ["--execution_mode_for_batch=BATCH_FORCED"]}
# The accelerator a Vertex AI training job gets when TRAINER_ACCELERATOR_TYPE is not set; a step
# that trains in its own container (VERTEX_TRAINING=0) gets none unless asked.
DEFAULT_VERTEX_ACCELERATOR = "NVIDIA_TESLA_T4"
# A Kubernetes extended resource name (a domain prefix, a name): what a Kubeflow cluster's pods
# ask for an accelerator by, e.g. nvidia.com/gpu or amd.com/gpu.
KUBERNETES_RESOURCE = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+/"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
CLOUD_REGISTRIES = ("vertex", "mlflow", "none")
ENGINES = ("vertex", "kubeflow")  # where `tfx-transformers submit` starts runs
# What `compile --target` compiles for (pipeline/kubeflow_runner.py: for_target), and the
# job's label that names it (`launch` reads it).
TARGETS = ("vertex", "kubeflow")
TARGET_LABEL = "tfx-transformers-target"


@dataclasses.dataclass(frozen=True)
class CloudConfig:
    project: str
    root: str  # gs://bucket/prefix: pipelines/, serving_model/, tmp/ and by default data/
    image: str  # built from kubeflow/Dockerfile and pushed
    region: str = "us-central1"
    data_root: str = ""  # default <root>/data; a folder per task below it
    machine_type: str = "n1-standard-8"
    # None (unset): DEFAULT_VERTEX_ACCELERATOR for a Vertex AI training job, none for a step
    # that trains in its own container; "": CPU only. On the kubeflow target, a Kubernetes
    # resource name (nvidia.com/gpu); on Vertex AI, an AcceleratorType name (NVIDIA_L4).
    accelerator_type: Optional[str] = None
    accelerator_count: int = 1
    replica_count: int = 1  # > 1: the chief and replica_count - 1 workers
    vertex_training: bool = True  # False: train inside the pipeline step
    beam_runner: str = "dataflow"  # or "direct" (inside the pipeline step)
    dataflow_machine_type: str = "n1-standard-4"
    dataflow_max_workers: int = 8
    dataflow_image: str = ""  # the Dataflow workers' image (default: the pipeline image)
    registry: str = "vertex"  # vertex, mlflow (MLFLOW_TRACKING_URI) or none
    parent_model: str = ""  # register versions under this Vertex AI model
    mlflow_tracking_uri: str = ""  # the tracking server of MODEL_REGISTRY=mlflow
    # The identities the Vertex AI training job and the Dataflow workers run as (default: the
    # project's default service accounts).
    training_service_account: str = ""
    dataflow_service_account: str = ""
    # Resources of the steps that run inside their own container: the Beam steps with
    # BEAM_RUNNER=direct, the Trainer and Tuner with VERTEX_TRAINING=0 (which also get
    # TRAINER_ACCELERATOR_TYPE and _COUNT). CPUs ("8") and memory ("32G"); Vertex AI picks a
    # machine that has them. Empty: the orchestrator's default.
    beam_step_cpu: str = ""
    beam_step_memory: str = ""
    trainer_step_cpu: str = ""
    trainer_step_memory: str = ""
    # The portable runners' (BEAM_RUNNER portable, flink, spark) job server, and the worker
    # pool their SDK workers run in.
    beam_job_endpoint: str = ""
    beam_worker_pool: str = DEFAULT_WORKER_POOL
    # A Flink job's parallelism: the partitions of each stage, run as task slots free up (the
    # stages' data is written out between them). 0: the cluster's parallelism.default. It does
    # not bound a partition's size (the reading stage spreads records unevenly), and Beam's
    # Flink runner stalls on a partition whose outputs pass about 1 GB (docs/kubeflow.md).
    flink_parallelism: int = 0
    # The kubeflow target's pods (pipeline/pods.py parses and checks them): environment
    # variables from Kubernetes secrets in every step ("SECRET/KEY=ENV,..."), the service
    # account its runs' pods run as, and the node selector ("LABEL=VALUE,...") and tolerations
    # ("KEY[=VALUE]:EFFECT,...") of the Trainer's and Tuner's pods (an accelerator pool's).
    secret_env: str = ""
    kubernetes_service_account: str = ""
    trainer_node_selector: str = ""
    trainer_tolerations: str = ""
    # What the job is compiled for (`compile --target`): the orchestrator's names and rules for
    # resources follow it. Not from the environment.
    target: str = "vertex"

    def __post_init__(self):
        if not self.root.startswith("gs://"):
            raise ValueError(
                f"PIPELINE_ROOT must be a gs:// path, not {self.root!r}: compiled jobs keep "
                "their artifacts, pushed models and backups in Google Cloud Storage (on a "
                "Kubeflow cluster outside Google Cloud too; docs/kubeflow.md says why)"
            )
        if self.beam_runner not in BEAM_RUNNERS:
            raise ValueError(f"BEAM_RUNNER must be one of {BEAM_RUNNERS}, not {self.beam_runner!r}")
        if self.registry not in CLOUD_REGISTRIES:
            raise ValueError(
                f"MODEL_REGISTRY must be one of {CLOUD_REGISTRIES}, not {self.registry!r}"
            )
        for variable, value, read in (
            ("BEAM_STEP_CPU", self.beam_step_cpu, float),
            ("TRAINER_STEP_CPU", self.trainer_step_cpu, float),
            ("BEAM_STEP_MEMORY", self.beam_step_memory, gigabytes),
            ("TRAINER_STEP_MEMORY", self.trainer_step_memory, gigabytes),
        ):
            try:
                if value and read(value) <= 0:
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"{variable}={value!r}: expected a positive number (CPUs: 8; memory: "
                    "32G, 32Gi, 512M, or gigabytes)"
                ) from None
        if self.replica_count < 1 or self.accelerator_count < 0:
            raise ValueError(
                "TRAINER_REPLICA_COUNT must be >= 1 and TRAINER_ACCELERATOR_COUNT >= 0"
            )
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, not {self.target!r}")
        if self.flink_parallelism < 0 or (self.flink_parallelism and self.beam_runner != "flink"):
            raise ValueError(
                f"FLINK_PARALLELISM={self.flink_parallelism}: a Flink job's partitions, 1 or "
                f"more, with BEAM_RUNNER=flink (not {self.beam_runner})"
            )
        if self.beam_runner in PORTABLE_RUNNERS and not self.beam_job_endpoint:
            raise ValueError(
                f"BEAM_RUNNER={self.beam_runner} needs BEAM_JOB_ENDPOINT, the job server's "
                "address on the cluster (HOST:8099; docs/kubeflow.md, Beam on a portable runner)"
            )
        self.check_accelerators()
        self.check_kubernetes()

    def check_kubernetes(self) -> None:
        """The kubeflow target's pod settings, parsed as the platform spec will hold them;
        on Vertex AI, which has no such spec, refused."""
        given = [
            variable for variable in KUBERNETES_SETTINGS if getattr(self, ENVIRONMENT[variable])
        ]
        if given and self.target != "kubeflow":
            raise ValueError(
                f"{', '.join(given)}: settings of a Kubeflow cluster's pods, which a Vertex AI "
                "job has no place for: compile with --target kubeflow (on Vertex AI, the "
                "training job's machine and service account: TRAINER_MACHINE_TYPE, "
                "TRAINING_SERVICE_ACCOUNT)"
            )
        if given:
            from pipeline.pods import PodSettings

            PodSettings.of(self)

    def check_accelerators(self) -> None:
        """The accelerator names each orchestrator accepts: a Kubeflow pod asks for a
        Kubernetes resource (nvidia.com/gpu), a Vertex AI machine for an AcceleratorType."""
        trainer = self.trainer_step_accelerator()
        if self.target == "kubeflow" and trainer and not KUBERNETES_RESOURCE.match(trainer[0]):
            raise ValueError(
                f"TRAINER_ACCELERATOR_TYPE={trainer[0]!r} is not a Kubernetes resource name, "
                "which a Kubeflow cluster's pods ask for an accelerator by: use the name your "
                "nodes' device plugin serves, such as nvidia.com/gpu"
            )
        vertex = []
        training = self.training_accelerator()
        if self.vertex_training and training:
            vertex.append(training[0])
        if self.target == "vertex" and trainer:
            vertex.append(trainer[0])
        if vertex:
            from google.cloud.aiplatform_v1.types import AcceleratorType

            known = [n for n in AcceleratorType.__members__ if n != "ACCELERATOR_TYPE_UNSPECIFIED"]
            for name in vertex:
                if name not in known:
                    raise ValueError(
                        f"TRAINER_ACCELERATOR_TYPE={name!r} is not a Vertex AI accelerator "
                        f"type: one of {', '.join(sorted(known))}"
                    )

    def training_accelerator(self) -> Optional[tuple]:
        """(type, count) of each Vertex AI training job replica, or None for CPU only."""
        kind = (
            DEFAULT_VERTEX_ACCELERATOR if self.accelerator_type is None else self.accelerator_type
        )
        return (kind, self.accelerator_count) if kind and self.accelerator_count else None

    def trainer_step_accelerator(self) -> Optional[tuple]:
        """(type, count) of a Trainer step that trains in its own container (VERTEX_TRAINING=0),
        or None: only what TRAINER_ACCELERATOR_TYPE asks for."""
        if self.vertex_training or not (self.accelerator_type and self.accelerator_count):
            return None
        return (self.accelerator_type, self.accelerator_count)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ, **overrides):
        """The settings `environ` sets (see ENVIRONMENT), the defaults for the rest, then
        `overrides` by field name."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        missing = [
            name
            for name, field in ENVIRONMENT.items()
            if fields[field].default is dataclasses.MISSING
            and not environ.get(name)
            and field not in overrides
        ]
        if missing:
            raise ValueError(f"set {', '.join(missing)} (see docs/kubeflow.md)")
        parse: Dict[Any, Callable[[str], Any]] = {bool: flag, int: int}
        values = {
            field: parse.get(fields[field].type, str)(environ[name])
            for name, field in ENVIRONMENT.items()
            if name in environ
        }
        return cls(**{**values, **overrides})

    def paths(self, pipeline_name: str, task_data_dir: str) -> dict:
        """The pipeline's root, its serving folder and its data folder."""
        root = self.root.rstrip("/")
        data_root = (self.data_root or f"{root}/data").rstrip("/")
        return {
            "pipeline_root": f"{root}/pipelines/{pipeline_name}",
            "serving_model_dir": f"{root}/serving_model/{pipeline_name}",
            "data_dir": f"{data_root}/{task_data_dir}",
            "registry_dir": f"{root}/mlflow",
        }

    def beam_pipeline_args(self, pipeline_name: str) -> list:
        """Dataflow, with the pipeline image as the workers' SDK container (Transform's
        preprocessing_fn and the example gens are this project's code); or, with
        BEAM_RUNNER=direct, the runner local runs use (pipeline/local_beam.py: Beam's
        DirectRunner less its Prism attempt, which downloads a binary) inside the pipeline
        step, on every core of its machine. Naming the image there too keeps TFX from building
        and staging an sdist of itself for every Beam step."""
        if self.beam_runner == "direct":
            workers = self.direct_workers()
            # One worker: in the step's own process (a worker process would only import the
            # stack again); several, or one per core (0), in worker processes.
            mode = "in_memory" if workers == 1 else "multi_processing"
            return [
                f"--runner={configs.LOCAL_BEAM_RUNNER}",
                f"--direct_running_mode={mode}",
                f"--direct_num_workers={workers}",
                f"--sdk_container_image={self.image}",
            ]
        if self.beam_runner in PORTABLE_RUNNERS:
            return [
                f"--runner={PORTABLE_RUNNERS[self.beam_runner]}",
                f"--job_endpoint={self.beam_job_endpoint}",
                "--environment_type=EXTERNAL",
                f"--environment_config={self.beam_worker_pool}",
                f"--environment_cache_millis={ENVIRONMENT_CACHE_MILLIS}",
                *ENGINE_OPTIONS.get(self.beam_runner, []),
                *([f"--parallelism={self.flink_parallelism}"] if self.flink_parallelism else []),
                f"--sdk_container_image={self.image}",
            ]
        root = self.root.rstrip("/")
        service_account = (
            [f"--service_account_email={self.dataflow_service_account}"]
            if self.dataflow_service_account
            else []
        )
        return [
            "--runner=DataflowRunner",
            f"--project={self.project}",
            f"--region={self.region}",
            f"--temp_location={root}/tmp/{pipeline_name}",
            f"--sdk_container_image={self.dataflow_image or self.image}",
            "--experiments=use_runner_v2",
            f"--machine_type={self.dataflow_machine_type}",
            f"--max_num_workers={self.dataflow_max_workers}",
            *service_account,
        ]

    def direct_workers(self) -> int:
        """The local runner's workers inside a Beam step (BEAM_RUNNER=direct): one per CPU the
        step asks for (BEAM_STEP_CPU); without a request, 0 on Vertex AI (every core of the
        step's own machine) and 1 on a Kubeflow cluster, where 0 would start one per core of
        the node the pod shares."""
        if self.beam_step_cpu:
            return max(1, math.ceil(float(self.beam_step_cpu)))
        return 1 if self.target == "kubeflow" else 0

    def worker_pool_specs(self) -> list:
        """Vertex AI CustomJob worker pools: the chief, then replica_count - 1 workers (which
        Vertex AI names in TF_CONFIG, so run_fn trains with MultiWorkerMirroredStrategy)."""
        machine: Dict[str, Any] = {"machine_type": self.machine_type}
        accelerator = self.training_accelerator()
        if accelerator:
            machine.update(accelerator_type=accelerator[0], accelerator_count=accelerator[1])
        pool = {
            "machine_spec": machine,
            "replica_count": 1,
            "container_spec": {"image_uri": self.image},
        }
        pools = [pool]
        if self.replica_count > 1:
            pools.append({**pool, "replica_count": self.replica_count - 1})
        return pools

    def vertex_training_config(self) -> Optional[dict]:
        """The Google Cloud extension's custom_config for the Trainer and the Tuner, or None
        when they train inside their pipeline steps."""
        if not self.vertex_training:
            return None
        from tfx.extensions.google_cloud_ai_platform import constants
        from tfx.extensions.google_cloud_ai_platform.trainer.executor import TRAINING_ARGS_KEY
        from tfx.extensions.google_cloud_ai_platform.tuner.executor import TUNING_ARGS_KEY

        common = {constants.ENABLE_VERTEX_KEY: True, constants.VERTEX_REGION_KEY: self.region}
        pools = self.worker_pool_specs()
        identity = (
            {"service_account": self.training_service_account}
            if self.training_service_account
            else {}
        )
        return {
            "trainer": {
                **common,
                TRAINING_ARGS_KEY: {
                    "project": self.project,
                    "job_spec": {"worker_pool_specs": pools, **identity},
                },
            },
            # Trials run one at a time, each on the chief's machine.
            "tuner": {
                **common,
                TUNING_ARGS_KEY: {
                    "project": self.project,
                    "job_spec": {"worker_pool_specs": pools[:1], **identity},
                },
            },
        }

    def backup_root(self, pipeline_name: str) -> str:
        """Where the Trainer backs up (trainer_module/training/backup.py): outside the job's
        folder, so that a resubmitted job resumes the training a killed one left."""
        return f"{self.root.rstrip('/')}/backup/{pipeline_name}"

    def step_resources(self, role: str):
        """The KFP ResourceSpec of a step that runs in its own container: `role` "beam" (with
        BEAM_RUNNER=direct) or "trainer" (with VERTEX_TRAINING=0; with its accelerator); None
        when nothing is set or the work runs elsewhere (Dataflow, a Vertex AI training job)."""
        from kfp.pipeline_spec import pipeline_spec_pb2

        if role == "beam":
            if self.beam_runner != "direct":
                return None
            cpu, memory, accelerator = self.beam_step_cpu, self.beam_step_memory, None
        elif role == "trainer":
            if self.vertex_training:
                return None
            cpu, memory = self.trainer_step_cpu, self.trainer_step_memory
            accelerator = self.trainer_step_accelerator()
        else:
            raise ValueError(f"role must be 'beam' or 'trainer', not {role!r}")
        if not (cpu or memory or accelerator):
            return None
        spec = pipeline_spec_pb2.PipelineDeploymentConfig.PipelineContainerSpec.ResourceSpec()
        # Both spellings: the numeric fields (TFX's compiler checks them; older backends read
        # them) and the string ones that newer KFP and Vertex AI read.
        if cpu:
            spec.cpu_limit, spec.resource_cpu_limit = float(cpu), cpu
        if memory:
            spec.memory_limit, spec.resource_memory_limit = gigabytes(memory), memory
        if accelerator:
            kind, count = accelerator
            spec.accelerator.type, spec.accelerator.count = kind, count
            spec.accelerator.resource_type, spec.accelerator.resource_count = kind, str(count)
        return spec


def gigabytes(memory: str) -> float:
    """ "32G", "32Gi", "512M" or "16" (gigabytes) as gigabytes."""
    text = memory.strip()
    units = {"Gi": 2**30 / 1e9, "G": 1.0, "Mi": 2**20 / 1e9, "M": 1e-3}
    for suffix, scale in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return float(text)
