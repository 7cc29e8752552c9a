"""Benchmark: an int8 export against its float32 one, and both against ONNX Runtime, the peer a
team serving on CPUs would pick instead (issue 88).

    .venv/bin/python -m benchmarks.int8_serving [--model text_encoder|bert|translator]
        [--tarball PATH | --data DIR] [--epochs E] [--set KEY=VALUE ...] [--seconds 10]
        [--name NAME]
    .venv/bin/python -m benchmarks.int8_serving --reuse --output OUTPUT   # runs trained before

1. Trains the pipeline twice on the same data and seed (IMDB: imdb_pipeline.py's split;
   the translator: Multi30k): the family's recipe exported in float32, then with
   `--set quantize=int8`. Training is deterministic on the CPU, so the second export holds the
   first's weights, quantized. Both compute in float32 (`--mixed-precision off`, not the
   automatic bfloat16 of CPUs with AVX512-BF16), so that tf2onnx can convert the same model.
   `--epochs` below the recipe's trains a shorter model of the same shapes: the serving
   times are the recipe's, the validation figures that shorter model's (the file says so).
2. Per export: the validation figure (TFMA on the same held-out split: accuracy, or BLEU for
   the translator), size on disk, and serving
   (benchmarks/serving.py: the SavedModel's raw signature, MLflow's pyfunc, HTTP; one request's
   p50 and p99, examples a second at batch 32), the two exports measured in turn.
3. The peer: tf2onnx on the float32 export's raw signature, and whether ONNX Runtime loads it
   (the tf.Transform graph's string ops: where it breaks is recorded); then the model alone
   (`classify_transformed`: Transform's outputs in, probabilities out) converted, in ONNX
   Runtime as float32 and as its dynamic int8 quantization, beside the SavedModel's own
   `classify_transformed` and the int8 export's: one request and batch 32 of the same
   requests' token ids, and each one's accuracy over the validation split. The translator:
   tf2onnx on `translate` (Transform and the beam search) and on `translate_transformed` (the
   search alone), where each breaks, and the exports' search on the 32 sentences' ids, with
   ONNX Runtime's beside it where it runs.

Writes benchmarks/results/int8_serving/NAME.json (the docs' systems page shows it).
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import time

from benchmarks import pages, report, serving
from benchmarks.imdb_pipeline import DEFAULT_TARBALL, extract

MANIFEST = "int8_serving.json"  # under --output: the two runs trained, for --reuse
VARIANTS = ("float32", "int8")


TASKS = {"text_encoder": "imdb", "bert": "imdb", "translator": "translation"}
NAMES = {
    "text_encoder": "the text encoder on IMDB",
    "bert": "BERT on IMDB",
    "translator": "the translator on Multi30k",
}
# The validation figure each task's results carry: TFMA's metric and the name it is shown by.
FIGURES = {"imdb": ("binary_accuracy", "validation_accuracy"), "translation": ("bleu", "bleu")}


def train(args) -> dict:
    """Both pipelines; {variant: {"output", "metrics", "history"}}, also written to MANIFEST."""
    from pipeline.tasks import get_task

    task = TASKS[args.model]
    if args.epochs is None:
        args.epochs = get_task(task).recipe_epochs(args.model)
    extra = {"backbone_preset": os.path.abspath(args.bert_preset)} if args.bert_preset else {}
    if task == "translation":
        from benchmarks.translation_pipeline import DEFAULT_DATA, VAL_PAIRS

        data = args.data or DEFAULT_DATA
        model, config = None, report.model_config(task, args)
        eval_steps = -(-VAL_PAIRS // config.batch_size)
    else:
        data = args.data or extract(args.tarball, os.path.join(args.output, "data"))
        model, config = args.model, report.model_config(task, args, args.model)
        eval_steps = 5_000 // config.batch_size
    runs = {}
    for variant in VARIANTS:
        overrides = {**extra, **({"quantize": "int8"} if variant == "int8" else {})}
        summary, history = report.run_pipeline(args, task, data, eval_steps, model, overrides)
        runs[variant] = {
            "output": os.path.dirname(os.path.dirname(summary["pipeline_root"])),
            "pipeline_root": summary["pipeline_root"],
            "metrics": summary["metrics"],
            "blessed": summary["blessed"],
            "quantized_layers": history.get("quantized_layers"),
            "fit_seconds": history.get("fit_seconds"),
            "train_steps": history.get("train_steps"),
            "epochs": args.epochs,
        }
    with open(os.path.join(args.output, MANIFEST), "w") as f:
        json.dump(runs, f, indent=1)
    return runs


def registry_of(output: str):
    """The registry a run under `output` wrote, made the one MLflow's own calls read (the
    pipelines run in this process set MLflow's tracking URI to theirs)."""
    import mlflow

    from components.model_registry import mlflow_registry
    from components.model_registry.backends import from_config, mlflow_config
    from pipeline import configs

    registry_dir = configs.output_paths(output, "")["registry_dir"]
    uri = mlflow_registry.local_tracking_uri(registry_dir)
    os.environ["MLFLOW_TRACKING_URI"] = uri
    mlflow.set_tracking_uri(uri)
    return from_config(mlflow_config(registry_dir, tracking_uri=uri))


def folder_mb(path: str) -> float:
    sizes = [os.path.getsize(p) for p in glob.glob(os.path.join(path, "**"), recursive=True)]
    return round(sum(sizes) / 1e6, 2)


def eval_records(pipeline_root: str, limit: int) -> list:
    """Serialized tf.Examples of the run's held-out split, as ExampleGen wrote them."""
    import tensorflow as tf

    files = glob.glob(
        os.path.join(pipeline_root, "*ExampleGen", "examples", "*", "Split-eval", "*")
    )
    return [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type="GZIP").take(limit)]


def validation_split(pipeline_root: str, limit: int) -> tuple:
    """(serialized tf.Examples, labels) of the run's held-out split."""
    import tensorflow as tf

    records = eval_records(pipeline_root, limit)
    labels = [
        tf.train.Example.FromString(r).features.feature["label"].int64_list.value[0]
        for r in records
    ]
    return records, labels


def as_examples(texts: list, template: bytes, feature: str = "text") -> list:
    """Raw inputs as serialized tf.Examples with every feature ExampleGen wrote (Transform
    parses them all): a copy of `template`, one of the run's, with the text as `feature`."""
    import tensorflow as tf

    examples = []
    for i, text in enumerate(texts):
        example = tf.train.Example.FromString(template)
        example.features.feature[feature].bytes_list.value[:] = [text.encode()]
        example.features.feature["id"].bytes_list.value[:] = [f"request-{i}".encode()]
        examples.append(example.SerializeToString())
    return examples


def transformed(saved_model, examples: list) -> dict:
    """Transform's outputs (the label's aside) of serialized raw tf.Examples, through the
    export's own graph."""
    import tensorflow as tf

    outputs = saved_model.signatures["transform_features"](examples=tf.constant(examples))
    return {k: v.numpy() for k, v in outputs.items() if k != "label"}


def in_batches(features: dict, size: int):
    count = len(next(iter(features.values())))
    for start in range(0, count, size):
        yield {k: v[start : start + size] for k, v in features.items()}


def to_onnx(export_dir: str, signature: str, path: str) -> str:
    """tf2onnx on one signature of the export, loaded in ONNX Runtime: `path`, or where it
    broke (tf2onnx's last line, or ONNX Runtime's refusal)."""
    import onnxruntime as ort

    # tf2onnx's command line, with tensorflow-text's ops registered so that TensorFlow loads
    # the export (WordPiece) and the conversion, not the loading, says where it stops.
    convert = "import sys, trainer_module.serving.custom_ops, tf2onnx.convert as c; c.main()"
    command = [sys.executable, "-c", convert, "--saved-model", export_dir]
    command += ["--signature_def", signature, "--output", path, "--opset", "17"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=serving.ROOT)
    if done.returncode != 0:
        return "tf2onnx: " + (done.stderr.strip().splitlines() or ["failed"])[-1]
    try:
        ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as error:  # ONNX Runtime refuses the graph: say where
        return f"ONNX Runtime: {str(error).splitlines()[0][:400]}"
    return path


def onnx_models(export_dir: str, folder: str) -> dict:
    """tf2onnx on the raw signature and on `classify_transformed`; the latter's dynamic int8
    quantization. {name: path or the reason there is none}."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from components.model_registry.mlflow_model import raw_signature

    found = {}
    for name, signature in (("raw", raw_signature(export_dir)), ("model", "classify_transformed")):
        found[name] = to_onnx(export_dir, signature, os.path.join(folder, f"{name}.onnx"))
    if os.path.exists(str(found.get("model"))):
        int8 = os.path.join(folder, "model-int8.onnx")
        quantize_dynamic(found["model"], int8, weight_type=QuantType.QInt8)
        found["model_int8"] = int8
    return found


class SavedModelPart:
    """An export's classify_transformed, called on numpy features."""

    def __init__(self, saved_model):
        self.function = saved_model.signatures["classify_transformed"]
        self.size_mb = None

    def __call__(self, features: dict):
        import tensorflow as tf

        tensors = {k: tf.constant(v) for k, v in features.items()}
        return self.function(**tensors)["probabilities"].numpy()


class OnnxPart:
    """An ONNX model of a model part in ONNX Runtime, on every core."""

    def __init__(self, path: str, output: str = "probabilities"):
        import onnxruntime as ort

        self.output = output
        options = ort.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.size_mb = round(os.path.getsize(path) / 1e6, 2)

    def __call__(self, features: dict):
        feed = {k: v for k, v in features.items() if k in self.inputs}
        return self.session.run([self.output], feed)[0]


def model_part_rows(runs: dict, folder: str, seconds: float, limit: int) -> tuple:
    """The model alone: the exports' classify_transformed and ONNX Runtime's, on the same
    token ids (one request, batch 32) and over the validation split. (rows, notes)"""
    import numpy as np
    import tensorflow as tf

    import trainer_module.serving.custom_ops  # noqa: F401  tensorflow-text's ops (WordPiece)

    loaded = {v: tf.saved_model.load(runs[v]["export_dir"]) for v in VARIANTS}
    records, labels = validation_split(runs["float32"]["pipeline_root"], limit)
    split = transformed(loaded["float32"], records)
    texts = serving.example_inputs("classify_text")
    requests = transformed(loaded["float32"], as_examples(texts, records[0]))
    converted = onnx_models(runs["float32"]["export_dir"], folder)
    notes = []
    if not os.path.exists(str(converted["raw"])):
        notes.append(f"ONNX of the raw signature: {converted['raw']}")
    parts: dict = {f"SavedModel {v}, model part": SavedModelPart(loaded[v]) for v in VARIANTS}
    for name, label in (("model", "float32"), ("model_int8", "int8 (dynamic)")):
        path = converted.get(name)
        if os.path.exists(str(path)):
            parts[f"ONNX Runtime {label}, model part"] = OnnxPart(str(path))
        else:
            notes.append(f"ONNX Runtime {label}: {path}")
    rows = {}
    one = {k: v[:1] for k, v in requests.items()}
    for name, part in parts.items():
        row = serving.measure(
            lambda part=part: part(one), lambda part=part: part(requests), seconds
        )
        predicted = np.concatenate([part(batch).argmax(-1) for batch in in_batches(split, 64)])
        row["validation_accuracy"] = round(float(np.mean(predicted == np.array(labels))), 4)
        if part.size_mb is not None:
            row["size_mb"] = part.size_mb
        rows[name] = row
    notes.append(
        f"Model-part accuracy over {len(labels)} validation reviews; the requests are the 32 "
        "embedded reviews' token ids (Transform ran before the clock)."
    )
    return rows, notes


def search_of(model):
    """source ids -> token ids, through an export's `translate_transformed` or an OnnxPart."""
    import tensorflow as tf

    if isinstance(model, OnnxPart):
        return lambda ids: model({"source_ids": ids})
    function = model.signatures["translate_transformed"]
    return lambda ids: function(source_ids=tf.constant(ids))["token_ids"].numpy()


def translator_part_rows(runs: dict, folder: str, seconds: float) -> tuple:
    """The translator's model alone (`translate_transformed`: the beam search on Transform's
    source ids), in the exports and, where tf2onnx converts it, in ONNX Runtime, on the 32
    embedded sentences' ids (one request, batch 32). (rows, notes)"""
    import tensorflow as tf

    import trainer_module.serving.custom_ops  # noqa: F401  tensorflow-text's ops (WordPiece)

    loaded = {v: tf.saved_model.load(runs[v]["export_dir"]) for v in VARIANTS}
    sentences = serving.example_inputs("translate")
    examples = as_examples(
        sentences, eval_records(runs["float32"]["pipeline_root"], 1)[0], "source"
    )
    source_ids = transformed(loaded["float32"], examples)["source_ids"]
    notes, converted = [], {}
    for signature in ("translate", "translate_transformed"):
        where = to_onnx(runs["float32"]["export_dir"], signature, f"{folder}/{signature}.onnx")
        converted[signature] = where
        if not os.path.exists(where):  # a reason, not the converted model's path
            notes.append(f"ONNX of `{signature}`: {where}")
    parts: dict = {f"SavedModel {v}, model part": search_of(loaded[v]) for v in VARIANTS}
    if os.path.exists(converted["translate_transformed"]):
        session = OnnxPart(converted["translate_transformed"], "token_ids")
        try:
            session({"source_ids": source_ids[:1]})
            parts["ONNX Runtime float32, model part"] = search_of(session)
        except Exception as error:  # converted and loaded, but it does not run: say where
            notes.append(f"ONNX Runtime on `translate_transformed`: {str(error)[:400]}")
    rows = {}
    reference = parts["SavedModel float32, model part"](source_ids)
    for name, part in parts.items():
        row = serving.measure(
            lambda part=part: part(source_ids[:1]), lambda part=part: part(source_ids), seconds
        )
        same = (part(source_ids) == reference).all(axis=1).sum()
        row["translations_as_float32"] = f"{int(same)}/{len(sentences)}"
        rows[name] = row
    return rows, notes


PEERS = ("ONNX Runtime float32, model part", "ONNX Runtime int8 (dynamic), model part")


def ratio_table(results: dict) -> dict:
    """Each row's one-request p50 over the peer's (ONNX Runtime's model part, float32 and
    int8): how many times slower than what a team would run instead."""
    peers = [results[p]["p50_ms"] for p in PEERS if p in results]
    rows = []
    for name, row in results.items():
        timed = [(name, row)] if "p50_ms" in row else []
        timed += [(f"{name}, {path}", row.get(path)) for path in ("saved_model", "pyfunc", "http")]
        for label, measured in timed:
            if isinstance(measured, dict) and "p50_ms" in measured:
                p50 = measured["p50_ms"]
                rows.append([label, p50, *(round(p50 / peer, 2) for peer in peers)])
    columns = ["row", "one request p50 (ms)"]
    columns += [f"÷ {p.replace(', model part', '')}" for p in PEERS if p in results]
    return {"title": "one request's p50 over ONNX Runtime's", "columns": columns, "rows": rows}


def tabulate(path: str) -> int:
    """Rewrites a results file's ratio table from its own rows (nothing measured again)."""
    with open(path) as f:
        record = json.load(f)
    record["tables"] = [ratio_table(record["results"])]
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    return 0


def main() -> int:
    from pipeline.tasks import get_task

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tarball", default=DEFAULT_TARBALL)
    parser.add_argument("--data", help="an extracted aclImdb tree (instead of --tarball)")
    parser.add_argument("--model", default="text_encoder", choices=sorted(TASKS))
    parser.add_argument("--bert-preset", help="with --model bert: a preset or checkpoint folder")
    parser.add_argument("--reuse", action="store_true", help="measure the runs --output holds")
    # float32 compute (not the Trainer's automatic bfloat16 on CPUs with AVX512-BF16): tf2onnx
    # cannot convert a graph with bfloat16 constants ("Numpy data type not understood yet:
    # dtype(bfloat16)"), so the peer could not be measured on the same model.
    parser.add_argument("--mixed-precision", default="off", help="the pipeline's (default: off)")
    parser.add_argument(
        "--blessing-threshold",
        type=float,
        help="the pipeline's (a shorter --epochs may not reach the task's default gate: the "
        "benchmark serves the registered champions)",
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="per measurement")
    parser.add_argument("--limit", type=int, default=5_037, help="validation reviews scored")
    report.add_pipeline_arguments(parser, "int8_serving", None, None)
    parser.add_argument("--tabulate", metavar="RESULTS_FILE", help="only redo its ratio table")
    args = parser.parse_args()
    if args.tabulate:
        return tabulate(args.tabulate)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.makedirs(args.output, exist_ok=True)
    if args.reuse:
        with open(os.path.join(args.output, MANIFEST)) as f:
            runs = json.load(f)
        args.epochs = args.epochs or runs["float32"].get("epochs")
    else:
        runs = train(args)

    metric, figure = FIGURES[TASKS[args.model]]
    results = {}
    for variant in VARIANTS:
        registry = registry_of(runs[variant]["output"])
        (name,) = {row["name"] for row in registry.versions()}  # the run's pipeline
        champion = registry.by_alias(name, "champion")
        runs[variant]["export_dir"] = champion["saved_model"]
        row = serving.benchmark(runs[variant]["output"], name, registry, args.seconds)
        results[f"{variant} export"] = {
            figure: runs[variant]["metrics"].get(metric),
            "size_mb": folder_mb(champion["saved_model"]),
            # Through the SavedModel, as the exports were served when this study ran.
            "saved_model": row["savedmodel, in-process"],
            "pyfunc": row["savedmodel, pyfunc"],
            "http": row["savedmodel, http via MLflow's app"],
        }
    started = time.monotonic()
    folder = os.path.join(args.output, "onnx")
    os.makedirs(folder, exist_ok=True)
    if TASKS[args.model] == "translation":
        parts, notes = translator_part_rows(runs, folder, args.seconds)
    else:
        parts, notes = model_part_rows(runs, folder, args.seconds, args.limit)
    results.update(parts)
    seconds = time.monotonic() - started
    print(f"\nint8 and ONNX Runtime serving ({report.machine()}), the peer in {seconds:.0f} s\n")
    columns, rows = pages.nested_table(results)
    for row in rows:
        print(" | ".join(str(c) for c in row))
    for note in notes:
        print(note)
    trained = {v: {k: runs[v].get(k) for k in ("train_steps", "fit_seconds")} for v in VARIANTS}
    title = f"int8 and ONNX Runtime: {NAMES[args.model]}, {args.epochs:g} epochs"
    report.save(
        "int8_serving",
        args.name or f"{args.model}-int8",
        {
            "title": title,
            "model": args.model,
            "epochs": args.epochs,
            "recipe_epochs": get_task(TASKS[args.model]).recipe_epochs(args.model),
            "trained": trained,
            "quantized_layers": runs["int8"].get("quantized_layers"),
            "results": results,
            "tables": [ratio_table(results)] if any(p in results for p in PEERS) else [],
            "notes": notes,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
