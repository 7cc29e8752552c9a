"""Benchmark: where one request's time goes inside an export (issue 88): a classifier's
tokenization (the Transform graph), padding trim, backbone and head; the translator's
Transform, encoder and each step of the beam search.

    .venv/bin/python -m benchmarks.serving_profile EXPORT_DIR [EXPORT_DIR ...]
        [--repeats 30] [--name NAME]

Each export's raw signature answers the first embedded request (benchmarks/serving.py's: a
review of 184 words, or a German sentence) in a TensorFlow session traced in full
(RunOptions.FULL_TRACE, the step stats of every kernel run). Each kernel's time goes to the
first part whose pattern its node name matches; a part's figure is the median, over
`--repeats` traced calls, of its kernels' summed times. On 2 cores two kernels can run at
once, so the parts may add up to a little more than the call; the untraced call's median is
beside them. A node in the body of the search's while loop runs once per step: the steps are counted
from them. Writes benchmarks/results/serving_profile/NAME.json.
"""

import argparse
import collections
import os
import re
import statistics
import sys
import time

from benchmarks import report, serving

CALL = "transform_features_layer/StatefulPartitionedCall"  # the Transform layer, not inlined
MODEL = r"_classifier|translator"  # the model's kernels, inlined in the signature's graph
# (part, pattern of the node names whose kernels it holds), first match wins.
CLASSIFIER_PARTS = (
    ("tokenization (Transform graph)", r"transform_features_layer"),
    ("backbone: embeddings", r"_classifier[^/]*/(token|position|segment)_embedding|embeddings_"),
    ("backbone: transformer layers", r"_classifier[^/]*/transformer_layer_\d+"),
    ("head (pooling, classifier, n-gram path, combination)", r"_classifier"),
    ("padding trim, casts, labels (outside the model)", r""),
)
TRANSLATOR_PARTS = (
    ("tokenization (Transform graph)", r"transform_features_layer"),
    ("beam search steps (decoder)", r"/while/"),
    ("encoder and the rest (detokenization)", r""),
)


def step_times(run_metadata) -> list:
    """(node name, start, microseconds) of every kernel the traced call ran."""
    return [
        (node.node_name, node.all_start_micros, node.op_end_rel_micros)
        for device in run_metadata.step_stats.dev_stats
        for node in device.node_stats
    ]


def by_part(kernels: list, parts: tuple) -> dict:
    """Summed microseconds per part. A function the graph calls rather than inlines (the
    Transform layer's) is one node whose time includes its own kernels, which the trace also
    lists under their own names: those, the kernels that start within the call and are not
    the model's, are counted once, in the call's part."""
    calls = [(start, start + micros) for name, start, micros in kernels if name.endswith(CALL)]
    summed: dict = collections.Counter()
    for name, start, micros in kernels:
        inside = any(begin < start < end for begin, end in calls)
        if inside and not re.search(MODEL, name):
            continue
        summed[next(part for part, pattern in parts if re.search(pattern, name))] += micros
    return summed


def profile(export_dir: str, repeats: int) -> dict:
    """One request through the export's raw signature, traced `repeats` times."""
    import tensorflow as tf

    import trainer_module.serving.custom_ops  # noqa: F401  tensorflow-text's ops (WordPiece)
    from components.model_registry.mlflow_model import raw_signature

    signature_name = raw_signature(export_dir)
    parts = TRANSLATOR_PARTS if signature_name == "translate" else CLASSIFIER_PARTS
    request = serving.example_inputs(signature_name)[:1]
    graph = tf.Graph()
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
        signature = meta.signature_def[signature_name]
        (feed,) = [tensor.name for tensor in signature.inputs.values()]
        fetches = [tensor.name for tensor in signature.outputs.values()]
        for _ in range(10):
            session.run(fetches, {feed: request})
        untraced = []
        for _ in range(repeats):
            started = time.perf_counter()
            session.run(fetches, {feed: request})
            untraced.append(time.perf_counter() - started)
        options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
        totals: dict = collections.defaultdict(list)
        steps = []
        for _ in range(repeats):
            run_metadata = tf.compat.v1.RunMetadata()
            session.run(fetches, {feed: request}, options=options, run_metadata=run_metadata)
            kernels = step_times(run_metadata)
            summed = by_part(kernels, parts)
            loop_runs = collections.Counter(n for n, _, _ in kernels if "/while/body/" in n)
            for name, _ in parts:
                totals[name].append(summed[name] / 1000)
            steps.append(max(loop_runs.values(), default=0))
    result: dict = {
        "signature": signature_name,
        "request": f"{len(request[0].split())} words",
        "call_ms_untraced_p50": round(statistics.median(untraced) * 1000, 2),
        "parts_ms_p50": {name: round(statistics.median(totals[name]), 2) for name, _ in parts},
    }
    if signature_name == "translate":
        result["search_steps"] = int(statistics.median(steps))
        search = result["parts_ms_p50"][TRANSLATOR_PARTS[1][0]]
        result["ms_per_search_step"] = round(search / max(1, int(statistics.median(steps))), 2)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exports", nargs="+", metavar="EXPORT_DIR")
    parser.add_argument("--labels", nargs="+", help="a label per export (default: its folder)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--title", help="the results file's title")
    parser.add_argument("--name", default="profile")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    labels = args.labels or [os.path.basename(os.path.dirname(e.rstrip("/"))) for e in args.exports]
    results = {}
    for label, export_dir in zip(labels, args.exports):
        results[label] = profile(export_dir, args.repeats)
        print(f"\n{label} ({report.machine()}):")
        for key, value in results[label].items():
            print(f"  {key}: {value}")
    report.save(
        "serving_profile",
        args.name,
        {"title": args.title or "Where one request's time goes", "results": results},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
