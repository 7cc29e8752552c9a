"""What the benchmarks share: the machine, peak memory, the side-by-side comparison table, and
the results files the documentation is built from.

Every benchmark writes its result as `benchmarks/results/<benchmark>/<name>.json` (`save`): the
benchmark, a name for the configuration measured, the date, the machine (CPU model, cores,
memory, Python), the command, the commit, and the figures. docs/benchmarks.md is generated from
these files (benchmarks/pages.py, through scripts/docs_macros.py); no figure is copied into the
documentation by hand.
"""

import collections
import contextlib
import datetime
import glob
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

from components.cost_estimate.machine import cpu_identity, cpu_model

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(REPO, "benchmarks", "results")
# Where the pipeline benchmarks run their pipelines (not committed).
RUNS_DIR = os.path.join(REPO, "outputs", "benchmarks")


def machine_info() -> dict:
    """The machine a figure was measured on."""
    try:
        memory_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024**3)
    except (ValueError, OSError):
        memory_gb = None
    return {
        "cpu": cpu_model(),
        **cpu_identity(),
        "architecture": platform.machine(),
        "cores": os.cpu_count(),
        "memory_gb": memory_gb,
        "python": platform.python_version(),
    }


def hardware_name() -> str:
    """amd-epyc-family-26-model-2-2-cores-avx512-bf16: the CPU's model name, its family and
    model numbers (one name covers two generations of EPYC, 0.36 and 0.87 TFLOP/s apart), its
    core count and its bfloat16 instructions, as a file name."""
    from trainer_module.training.precision import cpu_bfloat16_flags

    identity = cpu_identity()
    words = "".join(c if c.isalnum() else "-" for c in cpu_model().lower()).split("-")
    numbers = (
        ["family", identity["cpu_family"], "model", identity["cpu_model_number"]]
        if identity["cpu_family"]
        else []
    )
    flags = [f.replace("_", "-") for f in cpu_bfloat16_flags()]
    return "-".join([w for w in words if w] + numbers + [f"{os.cpu_count()}-cores"] + flags)


def machine() -> str:
    info = machine_info()
    return f"{info['cpu']}, {info['architecture']}, {info['cores']} cores, Python {info['python']}"


def commit() -> str:
    """The commit the benchmark ran from, `+` when the tree had uncommitted changes (or
    BENCHMARK_COMMIT, for a copy of the tree without its git folder)."""
    if os.environ.get("BENCHMARK_COMMIT"):
        return os.environ["BENCHMARK_COMMIT"]

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.strip()

    head = git("rev-parse", "--short=12", "HEAD")
    return (head + "+") if head and git("status", "--porcelain", "--untracked-files=no") else head


class MemorySampler:
    """Samples the resident memory of this process and all its descendants (Beam's worker
    processes) every `interval` seconds in a thread: `peak_between(start, end)` is the largest
    sum seen in that window (epoch seconds), `peak()` over the whole run, both in GB."""

    def __init__(self, interval: float = 0.5):
        import threading

        self.interval = interval
        self.samples: list[tuple] = []  # (time, GB of the tree, GB of this process)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self):
        import psutil

        me = psutil.Process()
        while not self._stop.is_set():
            total = own = me.memory_info().rss
            for child in me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:  # exited between listing and reading
                    pass
            self.samples.append((time.time(), total / 1024**3, own / 1024**3))
            self._stop.wait(self.interval)

    def peak_between(self, start: float, end: float) -> dict:
        window = [s for s in self.samples if start <= s[0] <= end] or [(0.0, 0.0, 0.0)]
        return {
            "tree_gb": round(max(s[1] for s in window), 2),
            "launcher_gb": round(max(s[2] for s in window), 2),
        }

    def peak(self) -> dict:
        return self.peak_between(0.0, float("inf"))


def op_seconds(run, part_of, repeats: int = 2) -> dict:
    """The compute threads' busy seconds per call of `run`, by part: part_of(op) names what a
    profiled op ("scope/name:Type") belongs to. From TensorFlow's profiler trace of `repeats`
    calls."""
    import tensorflow as tf

    try:
        from tsl.profiler.protobuf import xplane_pb2
    except ImportError:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2

    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        for _ in range(repeats):
            run()
        tf.profiler.experimental.stop()
        (path,) = glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)
        space = xplane_pb2.XSpace()
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
    seconds: collections.Counter = collections.Counter()
    for plane in space.planes:
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        for line in plane.lines:
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name = names.get(event.metadata_id, "")
                if ":" not in name or "::" in name:  # the executor's spans, not ops
                    continue
                seconds[part_of(name)] += event.duration_ps / 1e12
    return {key: value / repeats for key, value in seconds.items()}


def peak_memory_gb() -> float:
    """Peak resident memory of this process and its children, in GB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round((own + children) / 1024**2, 2)  # ru_maxrss is in KiB on Linux


def print_comparison(measured: dict, references) -> None:
    """One row per (name, measured key, reference value, what the reference is), with the ratio."""
    print(f"{'measure':32} {'measured':>10} {'reference':>10} {'ratio':>7}  reference")
    for name, key, reference, kind in references:
        value = measured.get(key)
        if value is None:
            print(f"{name:32} {'-':>10} {reference:>10.4g} {'-':>7}  {kind}")
            continue
        print(f"{name:32} {value:>10.4g} {reference:>10.4g} {value / reference:>7.3f}  {kind}")


def print_table(columns, rows) -> None:
    """A table of strings, each column right-aligned to its widest cell."""
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) for i, c in enumerate(columns)]
    for line in [columns, *rows]:
        print("  ".join(str(cell).rjust(width) for cell, width in zip(line, widths)))


def print_components(components: dict) -> None:
    print(f"\n{'component':32} {'state':>9} {'seconds':>8}")
    for node, info in components.items():
        print(f"{node:32} {info['state']:>9} {info['seconds']:>8.1f}")


def default_title(name: str) -> str:
    """A results file's title when its benchmark gives none: the benchmark's own first line
    and the run's name (give a better one as the result's "title")."""
    doc = (sys.modules["__main__"].__doc__ or "").strip().splitlines()
    what = doc[0].removeprefix("Benchmark:").strip().rstrip(".") if doc else "A benchmark run"
    return f"{what[:1].upper()}{what[1:]}: {name.replace('-', ' ')}"


def save(benchmark: str, name: str, result: dict, references=None) -> str:
    """Writes `result` as benchmarks/results/<benchmark>/<name>.json, with the date, machine,
    command and commit; `references`: (label, measured key, value, what it is) rows that the
    comparison table printed. Returns the path."""
    path = os.path.join(RESULTS_DIR, benchmark, f"{name}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # As it was run: `python -m benchmarks.<name> ARGS` from the repository root.
    module = os.path.splitext(os.path.relpath(sys.argv[0], REPO))[0].replace(os.sep, ".")
    command = " ".join(["python -m", module] + sys.argv[1:])
    record = {
        "benchmark": benchmark,
        "name": name,
        "date": datetime.date.today().isoformat(),
        # When it finished, UTC: runs of one day in the order they were measured.
        "measured_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "machine": machine_info(),
        "command": command,
        "commit": commit(),
        **result,
    }
    if references:
        record["references"] = [list(row) for row in references]
    record.setdefault("title", default_title(name))
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(f"\nwritten to {os.path.relpath(path)}")
    return path


def add_pipeline_arguments(
    parser, benchmark: str, epochs: float | None, preset: str | None
) -> None:
    """The options every pipeline benchmark takes besides its data."""
    parser.add_argument(
        "--name", help="the results file's name (default: the model, preset and overrides)"
    )
    parser.add_argument(
        "--output",
        default=os.path.join(RUNS_DIR, benchmark),
        help="where the pipeline runs (default: %(default)s)",
    )
    parser.add_argument("--epochs", type=float, default=epochs)
    parser.add_argument("--preset", default=preset)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--beam-mode", default="in_memory")


def result_name(args, model: str = "") -> str:
    """--name, or one made of the model family, preset and overrides: bert-default-lr=4e-05."""
    if getattr(args, "name", None):
        return args.name
    parts = [model, args.preset or "default"] + [o.replace("/", "_") for o in args.overrides]
    return "-".join(p for p in parts if p)


def overrides(args) -> dict:
    """The --set KEY=VALUE overrides, values read as the CLI reads them."""
    from pipeline.options import parse_override

    return dict(parse_override(o) for o in args.overrides)


def model_config(task: str, args, model=None):
    """The model config the benchmark trains (the family's preset with the overrides)."""
    from pipeline.options import PipelineOptions

    return PipelineOptions(
        task=task, model=model, preset=args.preset, overrides=overrides(args)
    ).model_config()


def run_pipeline(args, task: str, data_dir: str, eval_steps: int, model=None, extra_overrides=None):
    """Runs the task's pipeline in this process under <output>/run-<time>, training
    args.epochs (the Trainer turns them into steps from the examples it counts); returns the run
    summary and the Trainer's history.json ({} when it left none)."""
    from pipeline.options import PipelineOptions
    from pipeline.runner import build_local_pipeline, run_local

    pipeline, paths = build_local_pipeline(
        PipelineOptions(
            task=task,
            model=model,
            data=data_dir,
            output=os.path.join(args.output, f"run-{int(time.time())}"),
            epochs=args.epochs,
            eval_steps=eval_steps,
            beam_mode=args.beam_mode,
            preset=args.preset,
            overrides={**overrides(args), **(extra_overrides or {})},
            **{
                option: getattr(args, option)
                for option in ("mixed_precision", "blessing_threshold")
                if getattr(args, option, None) is not None
            },
        )
    )
    summary = run_local(pipeline, paths)
    summary["pipeline_root"] = paths["pipeline_root"]
    return summary, trainer_history(paths["pipeline_root"])


def trainer_history(pipeline_root: str) -> dict:
    """The Trainer's history.json under `pipeline_root` ({} when it left none)."""
    files = glob.glob(os.path.join(pipeline_root, "Trainer", "model_run", "*", "history.json"))
    if not files:
        return {}
    with open(files[0]) as f:
        return json.load(f)


def bert_step_flops(
    config, num_layers: int, hidden: int, intermediate: int, padded_lengths=None
) -> float:
    """The matrix-multiply FLOPs of one BERT training step, counted from its shapes: per token
    and block, the four attention projections (4 H²), the feed-forward network (2 H I) and the
    attention scores and mixing (2 T H), two FLOPs per multiply-add; forward through every
    block, backward (twice the forward) through the blocks that train. With `padded_lengths`
    ({T: share of the steps}, history.json's: length-grouped batches), the mean over the
    steps; else every step at config.sequence_length. TensorFlow's profiler counts several
    times this for a KerasHub BERT (it counts gathers and the embedding gradient as dense
    products), so the share of the peak is taken from this count."""
    trained = num_layers - config.frozen_layers
    shares = padded_lengths or {config.sequence_length: 1.0}
    return float(
        sum(
            share
            * config.batch_size
            * int(length)
            * 2
            * (4 * hidden**2 + 2 * hidden * intermediate + 2 * int(length) * hidden)
            * (num_layers + 2 * trained)
            for length, share in shares.items()
        )
    )


PEAK_SIZE, PEAK_SECONDS = 2048, 3.0  # hardware.py's largest size and its duration
_PEAKS: dict = {}


def peak_tflops(dtype: str) -> float:
    """This CPU's matmul peak in `dtype`, measured in this run (once per process, on first use:
    a few seconds), so a share of the peak never divides by another machine's."""
    if dtype not in _PEAKS:
        from trainer_module.training.precision import matmul_tflops

        _PEAKS[dtype] = round(matmul_tflops(PEAK_SIZE, dtype, PEAK_SECONDS), 3)
        print(f"matmul peak measured now: {_PEAKS[dtype]} TFLOP/s in {dtype}", flush=True)
    return _PEAKS[dtype]


def efficiency(step_flops: float, history: dict) -> dict:
    """history.json's training against this CPU's matmul peak (peak_tflops: measured in this
    run)."""
    policy = history.get("precision", "float32")
    dtype = "bfloat16" if "bfloat16" in policy else "float32"
    from lab.flops import share_of_peak

    achieved = step_flops * history["train_steps"] / history["fit_seconds"] / 1e12
    peak = peak_tflops(dtype)
    return {
        "precision": policy,
        "step_gflop": round(step_flops / 1e9, 2),
        "achieved_tflops": round(achieved, 4),
        "peak_tflops": peak,
        "fraction_of_peak": round(share_of_peak(achieved, peak, "the Trainer"), 3),
    }


def training_efficiency(build, config, history: dict, inputs) -> dict:
    """The Trainer's achieved arithmetic rate against this machine's matmul peak (peak_tflops:
    measured in this run): the FLOPs of one training step of the same model (build(config)),
    batch (`inputs`, one-hot labels of config.num_classes) and dtype policy, counted on its
    graph (lab/flops.py), times history.json's steps over its fit time.
    Validation passes are inside the fit time, so this is a lower bound."""
    import keras
    import numpy as np

    from lab.flops import training_flops

    with dtype_policy(history.get("precision", "float32")):
        model = build(config)
        model.compile(
            optimizer=keras.optimizers.AdamW(1e-3),
            loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        )
        labels = np.eye(config.num_classes, dtype="float32")[
            np.arange(config.batch_size) % config.num_classes
        ]
        step_flops = training_flops(model, inputs, labels)
    return efficiency(step_flops, history)


@contextlib.contextmanager
def dtype_policy(name: str):
    """Keras's global dtype policy set to `name` (the one a run trained under) for the block,
    then restored."""
    import keras

    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)
