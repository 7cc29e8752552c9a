"""Where a Kubeflow Pipelines / Vertex AI run lives: one home for its settings, read from the
environment, and what they become (paths, Beam's Dataflow arguments, Vertex AI training jobs).

Required: GOOGLE_CLOUD_PROJECT, PIPELINE_ROOT (gs://...), PIPELINE_IMAGE. Everything else has a
default; see ENVIRONMENT and CloudConfig. What the pipeline runs (task, model, steps...) is the
options object's (pipeline/options.py, TFXT_* variables), as for local runs.
"""

import dataclasses
import os
from typing import Mapping, Optional

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
    "DATAFLOW_MAX_WORKERS": "dataflow_max_workers",
    "MODEL_REGISTRY": "registry",
    "VERTEX_PARENT_MODEL": "parent_model",
}
BEAM_RUNNERS = ("dataflow", "direct")
CLOUD_REGISTRIES = ("vertex", "mlflow", "none")
ENGINES = ("vertex", "kubeflow")  # where `tfx-transformers submit` starts runs


@dataclasses.dataclass(frozen=True)
class CloudConfig:
    project: str
    root: str  # gs://bucket/prefix: pipelines/, serving_model/, tmp/ and by default data/
    image: str  # built from kubeflow/Dockerfile and pushed
    region: str = "us-central1"
    data_root: str = ""  # default <root>/data; a folder per task below it
    machine_type: str = "n1-standard-8"
    accelerator_type: str = "NVIDIA_TESLA_T4"  # "" for CPU only
    accelerator_count: int = 1
    replica_count: int = 1  # > 1: the chief and replica_count - 1 workers
    vertex_training: bool = True  # False: train inside the pipeline step
    beam_runner: str = "dataflow"  # or "direct" (inside the pipeline step)
    dataflow_machine_type: str = "n1-standard-4"
    dataflow_max_workers: int = 8
    registry: str = "vertex"  # vertex, mlflow (MLFLOW_TRACKING_URI) or none
    parent_model: str = ""  # register versions under this Vertex AI model

    def __post_init__(self):
        if not self.root.startswith("gs://"):
            raise ValueError(f"PIPELINE_ROOT must be a gs:// path, not {self.root!r}")
        if self.beam_runner not in BEAM_RUNNERS:
            raise ValueError(f"BEAM_RUNNER must be one of {BEAM_RUNNERS}, not {self.beam_runner!r}")
        if self.registry not in CLOUD_REGISTRIES:
            raise ValueError(
                f"MODEL_REGISTRY must be one of {CLOUD_REGISTRIES}, not {self.registry!r}"
            )
        if self.replica_count < 1 or self.accelerator_count < 0:
            raise ValueError(
                "TRAINER_REPLICA_COUNT must be >= 1 and TRAINER_ACCELERATOR_COUNT >= 0"
            )

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
        parse = {bool: flag, int: int}
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
        preprocessing_fn and the example gens are this project's code); or Beam's
        DirectRunner inside the pipeline step."""
        if self.beam_runner == "direct":
            return [
                "--runner=DirectRunner",
                "--direct_running_mode=multi_processing",
                "--direct_num_workers=0",
            ]
        root = self.root.rstrip("/")
        return [
            "--runner=DataflowRunner",
            f"--project={self.project}",
            f"--region={self.region}",
            f"--temp_location={root}/tmp/{pipeline_name}",
            f"--sdk_container_image={self.image}",
            "--experiments=use_runner_v2",
            f"--machine_type={self.dataflow_machine_type}",
            f"--max_num_workers={self.dataflow_max_workers}",
        ]

    def worker_pool_specs(self) -> list:
        """Vertex AI CustomJob worker pools: the chief, then replica_count - 1 workers (which
        Vertex AI names in TF_CONFIG, so run_fn trains with MultiWorkerMirroredStrategy)."""
        machine = {"machine_type": self.machine_type}
        if self.accelerator_type and self.accelerator_count:
            machine.update(
                accelerator_type=self.accelerator_type, accelerator_count=self.accelerator_count
            )
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
        return {
            "trainer": {
                **common,
                TRAINING_ARGS_KEY: {
                    "project": self.project,
                    "job_spec": {"worker_pool_specs": pools},
                },
            },
            # Trials run one at a time, each on the chief's machine.
            "tuner": {
                **common,
                TUNING_ARGS_KEY: {
                    "project": self.project,
                    "job_spec": {"worker_pool_specs": pools[:1]},
                },
            },
        }
