"""Benchmark: the data half of the pipeline (ExampleGen -> StatisticsGen -> SchemaGen ->
ExampleValidator -> AnomaliesGate -> Transform) at growing data sizes.

    .venv/bin/python -m benchmarks.scaling --task imdb [--scales 1 4 16]
        [--beam-mode multi_processing] [--source ../shared/data/imdb/aclImdb_train.tar.gz]
    .venv/bin/python -m benchmarks.scaling --task cifar10 --scales 1 4
        [--source ../shared/data/cifar10/cifar10_train_jpeg.tar.gz]

Replicates the real training data `scale` times under fresh ids (hard links, so the copies cost
no disk; symbolic links across file systems: IMDB reviews as train/<label>/<id + k *
10^6>_<rating>.txt, CIFAR-10 images as train/<class>/<k>_<name>), runs the data components with
LocalDagRunner for each size (one process per size, so that peak memory is that size's), and
prints per component the wall time and examples per second, the peak memory of each component
and of the run (this process and all its Beam workers, sampled), and the size of the Beam job
each ExampleGen builds, side by side for the sizes, with the ratio to the smallest. Targets:
examples per second at the largest size at least 0.8 of the smallest's for every component, peak
memory at most 8 GB. Writes <output>/scaling_<task>.json."""

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from typing import Any

from benchmarks import report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(REPO, "..", "shared", "data")
SOURCES = {
    "imdb": os.path.join(SHARED, "imdb", "aclImdb_train.tar.gz"),
    "cifar10": os.path.join(SHARED, "cifar10", "cifar10_train_jpeg.tar.gz"),
}
COMPONENTS = (
    "ExampleGen",
    "StatisticsGen",
    "SchemaGen",
    "ExampleValidator",
    "AnomaliesGate",
    "Transform",
)


def unpack(source: str, into: str) -> str:
    """The extracted tree of `source` (a tarball, or already a folder)."""
    if os.path.isdir(source):
        return source
    marker = os.path.join(into, ".extracted")
    if not os.path.exists(marker):
        with tarfile.open(source) as archive:
            archive.extractall(into, filter="data")
        open(marker, "w").close()
    return into


def training_files(tree: str, task: str) -> list:
    """(relative folder, file name) of every training file in the extracted tree."""
    files = []
    for folder, _, names in os.walk(tree):
        relative = os.path.relpath(folder, tree)
        if os.path.basename(os.path.dirname(folder)) != "train":
            continue  # aclImdb/train/{pos,neg,unsup}, train/<class>: the training split only
        if task == "imdb" and os.path.basename(folder) not in ("pos", "neg"):
            continue
        files += [(relative, n) for n in names if n.endswith((".txt", ".jpg", ".png"))]
    return sorted(files)


def link(source: str, target: str) -> None:
    """A hard link; a symbolic one across file systems."""
    try:
        os.link(source, target)
    except OSError:
        os.symlink(os.path.abspath(source), target)


def replicate(tree: str, task: str, scale: int, into: str) -> int:
    """Hard-links `scale` copies of the training files under fresh ids; returns the count."""
    marker = os.path.join(into, ".replicated")
    files = training_files(tree, task)
    if os.path.exists(marker):
        return len(files) * scale
    for copy in range(scale):
        for folder, name in files:
            if task == "imdb":  # aclImdb/train/pos/123_8.txt -> train/pos/<123 + k 10^6>_8.txt
                review_id, rating = name.split("_")
                new_name = f"{int(review_id) + copy * 1_000_000}_{rating}"
                target = os.path.join(into, "aclImdb", "train", os.path.basename(folder))
            else:  # train/cat/0001.jpg -> train/cat/<k>_0001.jpg
                new_name = f"{copy}_{name}"
                target = os.path.join(into, "train", os.path.basename(folder))
            os.makedirs(target, exist_ok=True)
            link(os.path.join(tree, folder, name), os.path.join(target, new_name))
    for name in ("classes.txt",):  # an image dataset's label order, when it has one
        if os.path.exists(os.path.join(tree, name)):
            link(os.path.join(tree, name), os.path.join(into, name))
    open(marker, "w").close()
    return len(files) * scale


def run_size(task: str, data: str, output: str, beam_mode: str) -> dict:
    """Runs the data components on `data` in this process: seconds per component, peak
    memory, and the Beam job size of the ExampleGen."""
    from tfx.orchestration import metadata
    from tfx.orchestration.pipeline import Pipeline

    from pipeline import configs
    from pipeline.factory import data_components
    from pipeline.options import PipelineOptions
    from pipeline.runner import run_local

    run = (
        PipelineOptions(task=task, data=data, output=output, beam_mode=beam_mode, no_cache=True)
        .local_paths()
        .resolve()
    )
    options = run.options
    paths = configs.output_paths(output, options.name)
    os.makedirs(os.path.dirname(paths["metadata_path"]), exist_ok=True)
    components = list(data_components(run, options.data).values())
    job_bytes = beam_job_bytes(components[0])
    pipeline = Pipeline(
        pipeline_name=options.name,
        pipeline_root=paths["pipeline_root"],
        components=components,
        enable_cache=False,
        metadata_connection_config=metadata.sqlite_metadata_connection_config(
            paths["metadata_path"]
        ),
        beam_pipeline_args=list[Any](configs.BEAM_MODES[beam_mode]),
    )
    started = time.time()
    with report.MemorySampler() as memory:
        summary = run_local(pipeline, paths)
    seconds = {
        ("ExampleGen" if name.endswith("ExampleGen") else name): info["seconds"]
        for name, info in summary["components"].items()
    }
    component_memory = {
        name: memory.peak_between(start, end)
        for name, (start, end) in component_windows(paths["metadata_path"], options.name).items()
    }
    return {
        "seconds": seconds,
        "wall_seconds": round(time.time() - started, 1),
        "peak_memory_gb": memory.peak()["tree_gb"],
        "memory": component_memory,
        "example_gen_job_bytes": job_bytes,
    }


def component_windows(metadata_path: str, pipeline_name: str) -> dict:
    """Component -> (start, end) epoch seconds of its execution in the newest run."""
    import ml_metadata as mlmd
    from tfx.orchestration import metadata

    from pipeline.run_summary import latest_run, node_id

    store = mlmd.MetadataStore(metadata.sqlite_metadata_connection_config(metadata_path))
    windows = {}
    run = latest_run(store, pipeline_name)
    if run is None:
        raise SystemExit(f"{metadata_path}: no run of {pipeline_name}")
    for execution in store.get_executions_by_context(run.id):
        name = node_id(store, execution.id, pipeline_name)
        windows["ExampleGen" if name.endswith("ExampleGen") else name] = (
            execution.create_time_since_epoch / 1000,
            execution.last_update_time_since_epoch / 1000,
        )
    return windows


def beam_job_bytes(example_gen) -> int:
    """The size of the Beam pipeline proto the ExampleGen's executor builds."""
    import apache_beam as beam

    from components.dataset_example_gen import as_exec_properties

    executor = example_gen.executor_spec.executor_class()
    pipeline = beam.Pipeline()
    executor.GenerateExamplesByBeam(
        pipeline, executor.resolve_layout(as_exec_properties(example_gen))
    )
    return len(pipeline.to_runner_api().SerializeToString())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(SOURCES), default="imdb")
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--source", help="the tarball or extracted tree (default: ../shared)")
    parser.add_argument("--beam-mode", default="multi_processing")
    parser.add_argument(
        "--output",
        default=os.path.join(report.RUNS_DIR, "scaling"),
        help="where the replicated data and the runs go",
    )
    parser.add_argument(
        "--one-size", nargs=2, metavar=("DATA", "OUTPUT"), help=argparse.SUPPRESS
    )  # the child process for one size
    args = parser.parse_args()
    if args.one_size:
        data, output = args.one_size
        print(json.dumps(run_size(args.task, data, output, args.beam_mode)))
        return 0

    tree = unpack(args.source or SOURCES[args.task], os.path.join(args.output, "source"))
    results = {}
    for scale in args.scales:
        data = os.path.join(args.output, f"{args.task}-x{scale}")
        examples = replicate(tree, args.task, scale, data)
        run_dir = os.path.join(args.output, f"run-{args.task}-x{scale}-{int(time.time())}")
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--task",
                args.task,
                "--beam-mode",
                args.beam_mode,
                "--one-size",
                data,
                run_dir,
            ],
            capture_output=True,
            text=True,
        )
        if child.returncode:
            sys.stderr.write(child.stderr[-4000:])
            return child.returncode
        results[scale] = {"examples": examples, **json.loads(child.stdout.splitlines()[-1])}
        print(
            f"{args.task} x{scale}: {examples:,} examples, {results[scale]['wall_seconds']:.0f} s",
            file=sys.stderr,
        )

    base = results[args.scales[0]]
    print(
        f"\nData components at growing sizes ({report.machine()}, --beam-mode "
        f"{args.beam_mode}); ratio: examples/s against x{args.scales[0]}\n"
    )
    header = f"{'component':18}" + "".join(
        f"{'x' + str(s) + ' s':>10}{'ex/s':>9}{'ratio':>7}" for s in args.scales
    )
    print(header)
    for component in COMPONENTS:
        row = f"{component:18}"
        for scale in args.scales:
            seconds = results[scale]["seconds"].get(component, 0.0)
            rate = results[scale]["examples"] / seconds if seconds >= 0.5 else None
            base_seconds = base["seconds"].get(component, 0.0)
            base_rate = base["examples"] / base_seconds if base_seconds >= 0.5 else None
            ratio = f"{rate / base_rate:>7.2f}" if rate and base_rate else f"{'-':>7}"
            row += f"{seconds:>10.1f}{(f'{rate:,.0f}' if rate else '-'):>9}{ratio}"
        print(row)
    print("\npeak memory, GB (this process and all its Beam workers; the launcher alone)")
    for component in COMPONENTS:
        print(
            f"{component:18}"
            + "".join(
                f"{'x' + str(s)}: {m.get('tree_gb', 0):>5.2f} ({m.get('launcher_gb', 0):.2f})    "
                for s in args.scales
                for m in [results[s]["memory"].get(component, {})]
            )
        )
    for name, key in (
        ("peak memory (GB)", "peak_memory_gb"),
        ("ExampleGen job (bytes)", "example_gen_job_bytes"),
        ("wall time (s)", "wall_seconds"),
    ):
        print(f"{name:24}" + "".join(f"{'x' + str(s)}: {results[s][key]:<12}" for s in args.scales))
    rates = []
    for component in COMPONENTS:
        measured = [
            (scale, results[scale]["examples"] / results[scale]["seconds"][component])
            for scale in args.scales
            if results[scale]["seconds"].get(component, 0.0) >= 0.5
        ]
        rates.append(
            {
                "component": component,
                "scales": [s for s, _ in measured],
                "examples_per_second": [round(r, 1) for _, r in measured],
            }
        )
    report.save(
        "scaling",
        args.task,
        {"task": args.task, "beam_mode": args.beam_mode, "results": results, "rates": rates},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
