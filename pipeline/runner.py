"""Runs a pipeline on this machine with LocalDagRunner, showing progress per component."""

import contextlib
import io
import logging
import os
import re
import sys
import threading
import time
import warnings
from typing import Dict, Mapping, Optional, TextIO

from absl import logging as absl_logging
from tfx.components.example_gen.driver import FileBasedDriver
from tfx.orchestration.local.local_dag_runner import LocalDagRunner

from components.dataset_example_gen import SPAN, LayoutExecutor, as_exec_properties
from components.model_registry.backends import mlflow_config
from components.unlabeled_example_gen.executor import list_inputs
from pipeline import configs, run_summary
from pipeline.factory import Deployment, create_inference_pipeline, create_pipeline
from pipeline.options import PipelineOptions
from trainer_module.training import progress

_COMPONENT_EVENT = re.compile(r"Component (\S+) is (running|finished)\.")
# Warnings the pinned stack emits on every run that say nothing about the user's pipeline.
_KNOWN_NOISE = (
    "ArtifactQuery.property_predicate is not supported",
    "is deprecated and will be removed in a future version",
    "Tables initialized inside a tf.function",
    "does not have payload_format custom property",
    # A resolver's channel of statistics: TFX's class for them serves all the same.
    "generating an ephemeral artifact class on-the-fly",
    # Beam's RunInference (BulkInferrer) on a platform without `resource`.
    "Resource module is not available for current platform",
    # tf.Transform, when an analyzer is traced again in the same order.
    "node's cache key varies on repeated tracing",
)


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


def build_local_pipeline(options: PipelineOptions) -> tuple:
    """The pipeline `options` describe, with local paths under `options.output`; returns
    (pipeline, paths).

    `options.registry`: "mlflow" registers pushed versions in MLflow (the server
    MLFLOW_TRACKING_URI names, else a local SQLite registry under the output); "none": no
    registry.
    """
    run = options.local_paths().resolve()
    options = run.options
    paths = configs.output_paths(options.output, options.name, options.metadata_uri)
    os.makedirs(os.path.dirname(paths["metadata_path"]), exist_ok=True)  # the run's lock
    deployment = Deployment(
        pipeline_root=paths["pipeline_root"],
        data_dir=options.data or "",  # local_paths() set it
        serving_model_dir=paths["serving_model_dir"],
        metadata_connection_config=configs.metadata_connection(paths["metadata"]),
        beam_pipeline_args=configs.BEAM_MODES[options.beam_mode],
        registry_config=(
            mlflow_config(paths["registry_dir"]) if options.registry == "mlflow" else None
        ),
        estimate_cost=True,
        dry_run=options.dry_run,
    )
    pipeline = create_pipeline(run, deployment)
    check_data(pipeline)
    return pipeline, paths


def build_local_inference(options: PipelineOptions, data_dir: str) -> tuple:
    """The bulk inference pipeline over `data_dir` for the training pipeline `options` name,
    with its paths; (pipeline, paths). Refuses before anything runs when that pipeline has
    pushed no model or the folder holds no inputs."""
    from pipeline.predict import resolve_model_dir

    run = options.resolve()
    paths = configs.output_paths(options.output, options.name, options.metadata_uri)
    try:
        resolve_model_dir(paths["serving_model_dir"])
    except FileNotFoundError:
        raise FileNotFoundError(
            f"pipeline {options.name} has pushed no model under "
            f"{os.path.abspath(options.output)}: run `tfx-transformers run --task "
            f"{options.task} --model {options.family.name}` first"
        ) from None
    data_dir = os.path.abspath(data_dir)
    list_inputs(data_dir, run.task.raw_feature)
    pipeline = create_inference_pipeline(
        run,
        pipeline_root=paths["pipeline_root"],
        data_dir=data_dir,
        metadata_connection_config=configs.metadata_connection(paths["metadata"]),
        beam_pipeline_args=configs.BEAM_MODES[options.beam_mode],
    )
    return pipeline, paths


def check_data(pipeline) -> None:
    """Finds the data layout the ExampleGen will find when it runs, so that a local run whose
    data is missing or unreadable stops before it starts, with the ExampleGen's own message."""
    for component in pipeline.components:
        executor_class = getattr(component.executor_spec, "executor_class", None)
        if isinstance(executor_class, type) and issubclass(executor_class, LayoutExecutor):
            exec_properties = as_exec_properties(component)
            if SPAN in exec_properties["input_config"]:  # the latest span, as the driver finds it
                # Span resolution reads neither the metadata store nor these two arguments.
                exec_properties = FileBasedDriver(
                    metadata_handle=None  # type: ignore[arg-type]
                ).resolve_exec_properties(exec_properties, None, None)  # type: ignore[arg-type]
            executor_class().resolve_layout(exec_properties)


class _Progress(logging.Handler):
    """Progress lines on `stream`: LocalDagRunner's 'Component X is running/finished' log lines
    become `[i/N] X ...` and `[i/N] X done in S s`; the Trainer's and Tuner's training progress
    (trainer_module/training/progress.py) is shown under its component's line, as a live line
    when `stream` is a terminal; a component that runs long without saying more shows its
    elapsed time every `tick` seconds."""

    def __init__(self, total: int, stream: TextIO, tick: float = configs.PROGRESS_TICK_SECONDS):
        super().__init__(logging.INFO)
        self.total, self.stream, self.tick, self.done = total, stream, tick, 0
        self.running: Dict[
            str, tuple
        ] = {}  # node -> (its number, when it started, when it last said something)
        self.live = False  # a live line is on the terminal, unterminated
        self.output_lock = threading.Lock()  # (logging.Handler has its own `lock`)
        self.stopped = threading.Event()
        self.ticker = threading.Thread(target=self._tick, daemon=True)
        self.ticker.start()

    def _write(self, line: str, live: bool = False) -> None:
        with self.output_lock:
            if live:
                self.stream.write("\r\033[K" + line)
            else:
                self.stream.write(("\n" if self.live else "") + line + "\n")
            self.live = live
            self.stream.flush()

    def emit(self, record):
        if record.name == progress.LOGGER:
            now = time.monotonic()
            for node, (number, started, _) in list(self.running.items()):
                self.running[node] = (number, started, now)
            self._write("    " + record.getMessage(), live=_is_terminal(self.stream))
            return
        match = _COMPONENT_EVENT.match(record.getMessage())
        if not match:
            return
        node, event = match.groups()
        now = time.monotonic()
        if event == "running":
            self.running[node] = (self.done + 1, now, now)
            self._write(f"[{self.done + 1}/{self.total}] {node} ...")
        else:
            self.done += 1
            _, started, _ = self.running.pop(node, (0, now, now))
            self._write(f"[{self.done}/{self.total}] {node} done in {now - started:.1f} s")

    def _tick(self) -> None:
        while not self.stopped.wait(min(self.tick, 1.0)):
            now = time.monotonic()
            for node, (number, started, said) in list(self.running.items()):
                if now - said >= self.tick:
                    self.running[node] = (number, started, now)
                    self._write(
                        f"[{number}/{self.total}] {node} ... {progress.duration(now - started)}"
                    )

    def close(self):
        self.stopped.set()
        if self.live:
            self._write("")
        super().close()


def _is_terminal(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


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
    progress_lines = _Progress(total, stream)
    root.handlers = [progress_lines, file_handler, console]
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
                warnings.filterwarnings(
                    "ignore", category=RuntimeWarning, module="tensorflow_model_analysis"
                )
            yield
    finally:
        progress_lines.close()
        file_handler.close()
        tf_logger.setLevel(saved_tf_level)
        root.setLevel(saved[0])
        root.handlers = saved[1]
        absl_handler.setLevel(saved[2])


def run_local(
    pipeline,
    paths: Mapping[str, str],
    verbose: bool = False,
    stream: Optional[TextIO] = None,
    summarize=run_summary.summarize,
) -> dict:
    """Runs `pipeline` with LocalDagRunner; returns the run summary (`summarize`: see
    run_summary). Progress lines go to `stream` (default: sys.stderr).

    Raises whatever a component raised; the full log is in paths['log_dir'].
    """
    stream = stream or sys.stderr
    log_file = os.path.join(
        paths["log_dir"],
        f"{pipeline.pipeline_info.pipeline_name}-{time.strftime('%Y%m%d-%H%M%S')}.log",
    )
    started = time.monotonic()
    with _logging_to(log_file, len(pipeline.components), verbose, stream):
        LocalDagRunner().run(pipeline)
        summary = summarize(paths["metadata"], pipeline.pipeline_info.pipeline_name)
    summary["wall_seconds"] = round(time.monotonic() - started, 2)
    if summary.get("cost"):  # the projection before Transform, beside what the run took
        summary["cost"]["actual_minutes"] = round(summary["wall_seconds"] / 60, 2)
    summary["log_file"] = log_file
    return summary
