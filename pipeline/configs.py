"""Pipeline knobs and defaults: one home for every setting that is not a model hyperparameter."""

import os
import pathlib
import re

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
EMBEDDED_DATA_DIR = REPO_ROOT / "data"  # the corpora the project writes itself
DEFAULT_OUTPUT_DIR = "outputs"  # pipeline roots, MLMD, pushed models and logs go under it
KUBEFLOW_BUILD_DIR = "kubeflow/build"  # compiled PipelineJob files (tfx-transformers compile)

TUNER_TRIALS = 8  # KerasTuner trials of the optional Tuner (--tune)
# The CLI shows a component that runs this long without a progress line of its own with its
# elapsed time, every this many seconds (the Trainer's own lines: trainer_module/training/
# progress.py, every INTERVAL_SECONDS).
PROGRESS_TICK_SECONDS = 30.0
# The Trainer's dtype policy (trainer_module/training/precision.py): auto is mixed precision
# where the hardware has a fast path for it (bfloat16 on this project's CPUs).
MIXED_PRECISION = "auto"

SPLIT_SEED = 42  # seed of the hash split when the data has no eval split of its own
TRAINING_SEED = 0

# Beam on the local machine. in_memory starts fastest on small data; multi_processing uses
# every core (TFX's own examples), at the cost of worker start-up per component.
# Both skip what only remote runners need: TFX builds and stages an sdist of itself for every
# Beam component unless an SDK image is named (local workers import the installed packages),
# and Beam's DirectRunner first tries the Prism runner, fetching its binary from GitHub, then
# falls back to the runner pipeline/local_beam.py names directly.
LOCAL_BEAM_RUNNER = "pipeline.local_beam.DirectRunner"
_LOCAL_ONLY = ["--sdk_container_image=local-workers-import-the-installed-packages"]
BEAM_MODES = {
    "in_memory": [
        f"--runner={LOCAL_BEAM_RUNNER}",
        "--direct_running_mode=in_memory",
        "--direct_num_workers=1",
        *_LOCAL_ONLY,
    ],
    "multi_processing": [
        f"--runner={LOCAL_BEAM_RUNNER}",
        "--direct_running_mode=multi_processing",
        "--direct_num_workers=0",
        *_LOCAL_ONLY,
    ],
}
DEFAULT_BEAM_MODE = "in_memory"

# Where local runs register pushed models: MLflow (MLFLOW_TRACKING_URI, else a SQLite registry
# under the output directory), or nowhere. Vertex AI's registry is for Vertex runs (kubeflow/).
REGISTRIES = ("mlflow", "none")
DEFAULT_REGISTRY = "mlflow"


def output_paths(output_dir: str, pipeline_name: str, metadata_uri: str = "") -> dict:
    """Where one pipeline keeps its artifacts, its MLMD database and its pushed models.
    "metadata" is what `metadata_connection` opens: `metadata_uri` (a MySQL server), else the
    SQLite file "metadata_path" (beside which the run's lock lives either way)."""
    output_dir = os.path.abspath(output_dir)
    metadata_path = os.path.join(output_dir, "metadata", pipeline_name, "metadata.sqlite")
    return {
        "pipeline_root": os.path.join(output_dir, "pipelines", pipeline_name),
        "metadata_path": metadata_path,
        "metadata": metadata_uri or metadata_path,
        "serving_model_dir": os.path.join(output_dir, "serving_model", pipeline_name),
        "log_dir": os.path.join(output_dir, "logs"),
        # The local MLflow registry (all pipelines; a model per pipeline name).
        "registry_dir": os.path.join(output_dir, "mlflow"),
    }


PIPELINE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def check_pipeline_name(name: str) -> str:
    """`name` if it can name a pipeline everywhere it runs (a folder, an MLflow model, a
    Kubeflow resource: lower-case letters, digits and inner hyphens, at most 63), else a
    ValueError that says so."""
    if name and not PIPELINE_NAME.match(name):
        raise ValueError(
            f"pipeline name {name!r}: use lower-case letters, digits and hyphens (not first or "
            "last), at most 63 characters, e.g. reviews-2026-text-encoder"
        )
    return name


MYSQL_URI = re.compile(
    r"mysql://(?P<user>[^:@/]+)(:(?P<password>[^@/]*))?@(?P<host>[^:/]+)(:(?P<port>\d+))?"
    r"/(?P<database>[A-Za-z0-9_$]+)$"
)


def check_metadata_uri(uri: str) -> str:
    """`uri` if it is empty (the SQLite file under the output) or a MySQL server's
    mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE; else a ValueError that shows the form."""
    if uri and not MYSQL_URI.match(uri):
        shown = re.sub(r"(//[^:@/]+:)[^@/]*@", r"\1***@", uri)  # never echo a password
        raise ValueError(
            f"--metadata-uri {shown}: expected mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE "
            "(ML Metadata on a MySQL or MariaDB server), or nothing for the SQLite file under "
            "--output"
        )
    return uri


def metadata_connection(metadata: str):
    """ML Metadata's connection config for output_paths(...)["metadata"]: a mysql:// URI
    (check_metadata_uri; the database is created if missing) or a SQLite file path."""
    from tfx.orchestration import metadata as tfx_metadata

    match = MYSQL_URI.match(metadata)
    if not match:
        return tfx_metadata.sqlite_metadata_connection_config(metadata)
    return tfx_metadata.mysql_metadata_connection_config(
        host=match["host"],
        port=int(match["port"] or 3306),
        database=match["database"],
        username=match["user"],
        password=match["password"] or "",
    )


def flag(text: str) -> bool:
    """How an environment switch reads (TFXT_TUNE, VERTEX_TRAINING): "", "0", "false" and "no"
    are off, anything else on."""
    return text.strip().lower() not in ("", "0", "false", "no")
