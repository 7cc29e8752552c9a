"""Benchmark: the pipeline's Beam steps on a Flink cluster against the local runner, on the
same data.

    .venv/bin/python -m benchmarks.beam_engines [--scale 16] [--slots 1 2]
        [--source ../shared/data/imdb/aclImdb_train.tar.gz]

The IMDB training reviews replicated `scale` times under fresh ids (benchmarks/scaling.py's
hard links), then ExampleGen, StatisticsGen, SchemaGen and Transform (the data steps a Flink
cluster takes over; the Evaluator needs a trained model and is left out) run with
LocalDagRunner three ways, each in its own process: on the local runner as local runs use it
(`--beam-mode multi_processing`: a worker per core), then on a standalone Flink session
cluster on loopback (scripts/flink.sh) with one task slot and with two, its SDK workers from
the pipeline image's worker pool (tests/beam_engines.py), with the arguments `compile` writes
for BEAM_RUNNER=flink plus the slots as the job's parallelism and SDK workers. Prints each
step's seconds and examples per second side by side, the ratio of each Flink run to the local
runner, and, on paper, what the 2-slot run's per-slot throughput projects for a cluster of N
task managers. Needs `make image flink`. Writes benchmarks/results/beam_engines/<name>.json.

On a machine of two cores, Flink's task managers and the SDK workers share the cores the local
runner has to itself: the ratio measures the engine's overhead (the job's translation and
submission, an SDK worker's start, the shuffles through Flink's network stack), not a
speed-up; a cluster earns one with more machines, which the projection assumes and this
machine cannot show."""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

from benchmarks import report
from benchmarks.scaling import SOURCES, replicate, unpack

STEPS = ("ExampleGen", "StatisticsGen", "SchemaGen", "Transform")
BEAM_STEPS = ("ExampleGen", "StatisticsGen", "Transform")
CLUSTER_SIZES = (1, 4, 16, 64)


def beam_arguments(engine: str, slots: int, image: str, pool: str, parallelism: int = 0) -> list:
    """The local runner's arguments as local runs use them, or those `compile` writes for
    BEAM_RUNNER=flink with FLINK_PARALLELISM=`parallelism`, `slots` SDK workers."""
    from pipeline import configs
    from pipeline.cloud import CloudConfig

    if engine == "direct":
        return list(configs.BEAM_MODES["multi_processing"])
    cloud = CloudConfig.from_environment(
        {
            "GOOGLE_CLOUD_PROJECT": "local",
            "PIPELINE_ROOT": "gs://unused/root",
            "PIPELINE_IMAGE": image,
            "BEAM_RUNNER": engine,
            "BEAM_JOB_ENDPOINT": "localhost:8099",
            "BEAM_WORKER_POOL": pool,
            "FLINK_PARALLELISM": str(parallelism),
        }
    )
    return cloud.beam_pipeline_args("imdb") + [f"--sdk_worker_parallelism={slots}"]


def run_steps(data: str, output: str, beam_args: list) -> dict:
    """The data steps on `data` in this process with `beam_args`: seconds per step."""
    from tfx.orchestration import metadata
    from tfx.orchestration.pipeline import Pipeline

    from pipeline import configs
    from pipeline.factory import data_components
    from pipeline.options import PipelineOptions
    from pipeline.runner import run_local

    run = (
        PipelineOptions(task="imdb", data=data, output=output, no_cache=True)
        .local_paths()
        .resolve()
    )
    paths = configs.output_paths(output, run.options.name)
    os.makedirs(os.path.dirname(paths["metadata_path"]), exist_ok=True)
    components = data_components(run, data, lineage_resolvers=False)
    kept = [components[k] for k in ("example_gen", "statistics_gen", "schema_gen", "transform")]
    transform = components["transform"]
    for upstream in list(transform.upstream_nodes):  # no validators or gate: Transform waits
        if upstream not in kept:  # only on its inputs
            transform.remove_upstream_node(upstream)
    pipeline = Pipeline(
        pipeline_name=run.options.name,
        pipeline_root=paths["pipeline_root"],
        components=kept,
        enable_cache=False,
        metadata_connection_config=metadata.sqlite_metadata_connection_config(
            paths["metadata_path"]
        ),
        beam_pipeline_args=beam_args,
    )
    started = time.time()
    summary = run_local(pipeline, paths)
    return {
        "seconds": {
            ("ExampleGen" if name.endswith("ExampleGen") else name): info["seconds"]
            for name, info in summary["components"].items()
        },
        "wall_seconds": round(time.time() - started, 1),
    }


def run_child(data: str, output: str, beam_args: list) -> dict:
    child = subprocess.run(
        [sys.executable, "-m", "benchmarks.beam_engines", "--one", data, output, "--"] + beam_args,
        capture_output=True,
        text=True,
    )
    if child.returncode:
        sys.stderr.write(child.stderr[-4000:])
        raise SystemExit(child.returncode)
    return json.loads(child.stdout.splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=16)
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--parallelism",
        type=int,
        default=0,
        help="the Flink jobs' parallelism (FLINK_PARALLELISM): partitions per stage, run as "
        "slots free up (default: the slots)",
    )
    parser.add_argument("--source", help="the tarball or extracted tree (default: ../shared)")
    parser.add_argument("--name", help="the results file's name (default: x<scale>)")
    parser.add_argument(
        "--output",
        default=os.path.join(report.RUNS_DIR, "beam_engines"),
        help="where the replicated data and the runs go",
    )
    parser.add_argument("--one", nargs=2, metavar=("DATA", "OUTPUT"), help=argparse.SUPPRESS)
    args, beam_args = parser.parse_known_args()
    if args.one:
        data, output = args.one
        print(json.dumps(run_steps(data, output, [a for a in beam_args if a != "--"])))
        return 0

    from tests import beam_engines
    from tests.pipeline_image import IMAGE

    output = os.path.abspath(args.output)
    tree = unpack(args.source or SOURCES["imdb"], os.path.join(output, "source"))
    data = os.path.join(output, f"imdb-x{args.scale}")
    examples = replicate(tree, "imdb", args.scale, data)
    print(f"IMDB x{args.scale}: {examples:,} training reviews", file=sys.stderr)

    runs = {}
    label = "local runner"
    runs[label] = run_child(
        data,
        os.path.join(output, f"direct-{int(time.time())}"),
        beam_arguments("direct", 0, IMAGE, ""),
    )
    print(f"{label}: {runs[label]['wall_seconds']:.0f} s", file=sys.stderr)
    for slots in args.slots:
        label = f"Flink, {slots} slot{'s' if slots > 1 else ''}"
        os.environ["FLINK_SLOTS"] = str(slots)
        os.environ.setdefault("FLINK_TM_MEMORY", "10g")
        os.environ.setdefault("FLINK_TM_OFF_HEAP", "1g")
        log = os.path.join(output, f"worker_pool-{slots}.log")
        pool = beam_engines.worker_pool(IMAGE, [output], pathlib.Path(log))
        with beam_engines.running("flink"), pool as (port, _):
            beam_args = beam_arguments(
                "flink", slots, IMAGE, f"localhost:{port}", args.parallelism or slots
            )
            runs[label] = run_child(
                data, os.path.join(output, f"flink{slots}-{int(time.time())}"), beam_args
            )
        print(f"{label}: {runs[label]['wall_seconds']:.0f} s", file=sys.stderr)

    base = runs["local runner"]
    labels = list(runs)
    columns = (
        ["step"]
        + [f"{label}: s (reviews/s)" for label in labels]
        + [f"{label} / local" for label in labels[1:]]
    )
    rows = []
    for step in STEPS:
        row = [step]
        for label in labels:
            seconds = runs[label]["seconds"].get(step, 0.0)
            rate = f" ({examples / seconds:,.0f}/s)" if step in BEAM_STEPS else ""
            row.append(f"{seconds:.1f}{rate}")
        for label in labels[1:]:
            row.append(f"{runs[label]['seconds'][step] / base['seconds'][step]:.2f}×")
        rows.append(row)
    rows.append(
        ["all four, wall"]
        + [f"{runs[label]['wall_seconds']:.0f}" for label in labels]
        + [f"{runs[label]['wall_seconds'] / base['wall_seconds']:.2f}×" for label in labels[1:]]
    )
    title = f"IMDB ×{args.scale} ({examples:,} training reviews), seconds"
    tables = [{"title": title, "columns": columns, "rows": rows}]

    # On paper: each Beam step's rate per slot in the widest Flink run, times N task managers of
    # that many slots, a core each (the shuffles and the analyzers' final merge do not shrink).
    widest = labels[-1]
    slots = args.slots[-1]
    projection_rows = []
    for step in BEAM_STEPS:
        per_slot = examples / runs[widest]["seconds"][step] / slots
        projection_rows.append(
            [step, f"{per_slot:,.0f}"]
            + [f"{examples * 1.0 / (per_slot * slots * n):.1f}" for n in CLUSTER_SIZES]
        )
    tables.append(
        {
            "title": f"On paper: {examples:,} reviews on N task managers of {slots} slots "
            f"(seconds, at the {widest} run's rate per slot, scaling linearly)",
            "columns": ["step", "reviews/s per slot"] + [f"N={n}" for n in CLUSTER_SIZES],
            "rows": projection_rows,
        }
    )
    for table in tables:
        print(f"\n{table['title']} ({report.machine()})")
        report.print_table(table["columns"], table["rows"])
    report.save(
        "beam_engines",
        args.name or f"x{args.scale}",
        {
            "title": f"The Beam steps on Flink against the local runner, IMDB ×{args.scale}",
            "examples": examples,
            "runs": runs,
            "tables": tables,
            "notes": [
                "Two cores: Flink's JobManager and TaskManager, the job server and the SDK "
                "workers share the cores the local runner has to itself, so the ratio is the "
                "engine's overhead, not a speed-up. The projection is linear in task managers "
                "and holds only where the data is spread over them; a multi-node run has not "
                "been made here.",
            ],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
