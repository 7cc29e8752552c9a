"""Runs a pipeline on this machine with LocalDagRunner, showing progress per component."""
import contextlib
import io
import logging
import os
import re
import sys
import time
import warnings
from typing import Any, Mapping, Optional, TextIO

from absl import logging as absl_logging
from tfx.orchestration import metadata
from tfx.orchestration.local.local_dag_runner import LocalDagRunner

from components.model_registry.backends import mlflow_config
from pipeline import configs, run_summary
from pipeline.factory import create_pipeline
from pipeline.tasks import get_task

_COMPONENT_EVENT = re.compile(r"Component (\S+) is (running|finished)\.")
# Warnings the pinned stack emits on every run that say nothing about the user's pipeline.
_KNOWN_NOISE = ("ArtifactQuery.property_predicate is not supported",
                "is deprecated and will be removed in a future version",
                "Tables initialized inside a tf.function",
                "does not have payload_format custom property")


class _PrintsToLog(io.TextIOBase):
    """Stands in for stdout while components run: what libraries print (KerasTuner's search
    summaries) becomes log lines, so the CLI's stdout carries its JSON summary alone."""

    def __init__(self):
        super().__init__()
        self.logger, self.pending = logging.getLogger("stdout"), ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            if line.strip():
                self.logger.info(line)
        return len(text)


def _not_noise(record: logging.LogRecord) -> bool:
    return not any(text in record.getMessage() for text in _KNOWN_NOISE)


def build_local_pipeline(*, task: str, model: Optional[str] = None, data_dir: Optional[str] = None,
                         data_options: Optional[Mapping[str, str]] = None,
                         output_dir: str = configs.DEFAULT_OUTPUT_DIR,
                         train_steps: Optional[int] = None, eval_steps: Optional[int] = None,
                         beam_mode: str = configs.DEFAULT_BEAM_MODE, preset: Optional[str] = None,
                         model_overrides: Optional[Mapping[str, Any]] = None,
                         blessing_threshold: Optional[float] = None,
                         schema_path: Optional[str] = None,
                         registry: Optional[str] = configs.DEFAULT_REGISTRY,
                         tune: bool = False, tuner_trials: int = configs.TUNER_TRIALS,
                         enable_cache: bool = True) -> tuple:
    """The pipeline for `task` with local paths under `output_dir`; returns (pipeline, paths).

    `registry`: "mlflow" registers pushed versions in MLflow (the server MLFLOW_TRACKING_URI
    names, else a local SQLite registry under `output_dir`); None or "none": no registry.
    """
    task_spec = get_task(task)
    model = model or task_spec.default_model
    if schema_path and not os.path.isfile(schema_path):
        raise FileNotFoundError(f"schema file not found: {schema_path}")
    if registry not in configs.REGISTRIES:
        raise ValueError(f"registry must be one of {configs.REGISTRIES}, not {registry!r}")
    if beam_mode not in configs.BEAM_MODES:
        raise ValueError(f"beam_mode must be one of {sorted(configs.BEAM_MODES)}, not {beam_mode!r}")
    pipeline_name = f"{task_spec.name}-{model}"
    paths = configs.output_paths(output_dir, pipeline_name)
    os.makedirs(os.path.dirname(paths["metadata_path"]), exist_ok=True)
    pipeline = create_pipeline(
        pipeline_name=pipeline_name,
        pipeline_root=paths["pipeline_root"],
        task=task_spec,
        model=model,
        data_dir=os.path.abspath(data_dir or task_spec.default_data_dir),
        data_options=data_options,
        serving_model_dir=paths["serving_model_dir"],
        metadata_connection_config=metadata.sqlite_metadata_connection_config(
            paths["metadata_path"]),
        beam_pipeline_args=configs.BEAM_MODES[beam_mode],
        train_steps=train_steps,
        eval_steps=eval_steps,
        preset=preset,
        model_overrides=model_overrides,
        blessing_threshold=blessing_threshold,
        schema_path=os.path.abspath(schema_path) if schema_path else None,
        registry_config=mlflow_config(paths["registry_dir"]) if registry == "mlflow" else None,
        tune=tune,
        tuner_trials=tuner_trials,
        enable_cache=enable_cache,
    )
    return pipeline, paths


class _Progress(logging.Handler):
    """Turns LocalDagRunner's 'Component X is running/finished' log lines into progress lines."""

    def __init__(self, total: int, stream: TextIO):
        super().__init__(logging.INFO)
        self.total, self.stream, self.done, self.started = total, stream, 0, {}

    def emit(self, record):
        match = _COMPONENT_EVENT.match(record.getMessage())
        if not match:
            return
        node, event = match.groups()
        if event == "running":
            self.started[node] = time.monotonic()
            print(f"[{self.done + 1}/{self.total}] {node} ...", file=self.stream, flush=True)
        else:
            self.done += 1
            seconds = time.monotonic() - self.started.get(node, time.monotonic())
            print(f"[{self.done}/{self.total}] {node} done in {seconds:.1f} s",
                  file=self.stream, flush=True)


@contextlib.contextmanager
def _logging_to(log_file: str, total: int, verbose: bool, stream: TextIO):
    """Progress lines on `stream`, TFX's full INFO log in `log_file`, and on the console only
    warnings (everything with `verbose`)."""
    root = logging.getLogger()
    absl_handler = absl_logging.get_absl_handler()
    saved = (root.level, list(root.handlers), absl_handler.level)
    os.makedirs(os.path.dirname(log_file), exist_ok=True)
    file_handler = logging.FileHandler(log_file)
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    console = logging.StreamHandler(stream)
    console.setLevel(logging.INFO if verbose else logging.WARNING)
    if not verbose:
        console.addFilter(_not_noise)
    # Owning the root handlers also stops libraries' logging.basicConfig() from adding one.
    root.handlers = [_Progress(total, stream), file_handler, console]
    root.setLevel(logging.INFO)
    absl_logging.set_verbosity(absl_logging.INFO)
    absl_handler.setLevel(logging.CRITICAL + 1)  # absl records reach the root handlers instead
    tf_logger = logging.getLogger("tensorflow")
    saved_tf_level = tf_logger.level
    if not verbose:  # TensorFlow's Python warnings are deprecation notices for library code
        tf_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(_PrintsToLog()):
            if not verbose:  # TFMA divides by zero for empty slices; NaN is the right answer
                warnings.filterwarnings("ignore", category=RuntimeWarning,
                                        module="tensorflow_model_analysis")
            yield
    finally:
        file_handler.close()
        tf_logger.setLevel(saved_tf_level)
        root.setLevel(saved[0])
        root.handlers = saved[1]
        absl_handler.setLevel(saved[2])


def run_local(pipeline, paths: Mapping[str, str], verbose: bool = False,
              stream: TextIO = sys.stderr) -> dict:
    """Runs `pipeline` with LocalDagRunner; returns the run summary (see run_summary.summarize).

    Raises whatever a component raised; the full log is in paths['log_dir'].
    """
    log_file = os.path.join(paths["log_dir"],
                            f"{pipeline.pipeline_info.pipeline_name}-{time.strftime('%Y%m%d-%H%M%S')}.log")
    started = time.monotonic()
    with _logging_to(log_file, len(pipeline.components), verbose, stream):
        LocalDagRunner().run(pipeline)
        summary = run_summary.summarize(paths["metadata_path"],
                                        pipeline.pipeline_info.pipeline_name)
    summary["wall_seconds"] = round(time.monotonic() - started, 2)
    summary["log_file"] = log_file
    return summary
