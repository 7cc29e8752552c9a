"""Writes a classifier export's ONNX runtimes and checks them on the evaluation split (the
Trainer does, after the SavedModel is written; runtimes.py serves them).

1. The model part (`classify_transformed`'s probabilities: Transform's outputs in) is frozen
   and converted by tf2onnx. A model trained in mixed precision computes in float32 there:
   its variables are float32 already, and the frozen graph's bfloat16 and float16 casts and
   constants are made float32 before conversion (ONNX Runtime's CPU kernels are float32 and
   int8).
2. ONNX Runtime's dynamic int8 quantization of it: each MatMul with constant weights takes
   them in int8 (per tensor), its inputs quantized per call.
3. Each runtime answers the first runtimes.CHECK_EXAMPLES examples of the evaluation split
   beside the SavedModel's `classify_transformed`: it passes where its label agrees with the
   SavedModel's on at least runtimes.MIN_AGREEMENT of them and its accuracy is within
   runtimes.MAX_ACCURACY_DROP of the SavedModel's. Each is timed on one example at a time
   (p50 of TIMED_CALLS calls) and at batch 32 (the check's own batches).
4. runtimes.json names the fastest that passed (the SavedModel where none did) as the one to
   serve by. A runtime that cannot be written (an op tf2onnx does not convert) is recorded
   with why, and the export is served by its SavedModel: it never fails the Trainer.
"""

import json
import logging as python_logging
import os
import shutil
import statistics
import tempfile
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from trainer_module import features
from trainer_module.serving import runtimes
from trainer_module.training import progress

MODEL_PART = "classify_transformed"
OPSET = 17
CHECK_BATCH = 32
TIMED_CALLS = 50
FILES = {runtimes.ONNX_FLOAT32: "model.onnx", runtimes.ONNX_INT8: "model-int8.onnx"}
PRECISIONS = {
    runtimes.SAVED_MODEL: "as trained",
    runtimes.ONNX_FLOAT32: "float32",
    runtimes.ONNX_INT8: "int8 (dynamic)",
}
# The dtypes the frozen graph is made float32 from (mixed_bfloat16, mixed_float16).
HALF_TYPES = (tf.bfloat16.as_datatype_enum, tf.float16.as_datatype_enum)


def write(export_dir: str, eval_files: Sequence[str], transformed_spec: dict) -> dict:
    """Writes `export_dir`/runtimes (any file system TensorFlow's reaches: the manifest last,
    so that a folder without it is one that serving ignores) and returns its manifest.

    Runs in a thread of its own: the Trainer calls it inside its distribution strategy's
    scope, which is per thread, and a SavedModel loaded inside a multi-replica scope cannot be
    called outside a replica."""
    written: dict = {}

    def run() -> None:
        try:
            written["manifest"] = write_here(export_dir, eval_files, transformed_spec)
        except BaseException as error:  # noqa: BLE001  raised again in the caller's thread
            written["error"] = error

    thread = threading.Thread(target=run, name="serving-runtimes")
    thread.start()
    thread.join()
    if "error" in written:
        raise written["error"]
    return written["manifest"]


def write_here(export_dir: str, eval_files: Sequence[str], transformed_spec: dict) -> dict:
    say("converting the model part to ONNX and checking it on the evaluation split")
    saved_model = tf.saved_model.load(export_dir)
    function = saved_model.signatures[MODEL_PART]
    partial = tempfile.mkdtemp(prefix="runtimes-")
    examples, labels = evaluation_examples(eval_files, transformed_spec, runtimes.CHECK_EXAMPLES)
    one = {name: tf.constant(value[:1]) for name, value in examples.items()}
    class_names = [name.decode() for name in function(**one)["classes"].numpy()[0]]
    reference = Runner(runtimes.SAVED_MODEL, saved_model_part(function))
    entries = [reference.check(examples, labels)]
    inputs: Dict[str, str] = {}
    try:
        inputs = convert(function, os.path.join(partial, FILES[runtimes.ONNX_FLOAT32]))
        quantize(partial)
    except Exception as error:  # tf2onnx or the quantizer stopped: served by the SavedModel
        logging.warning("ONNX runtimes not written: %s", error)
        reason = f"not converted: {first_line(error)}"
        entries += [{"name": n, "passed": False, "why": reason} for n in FILES]
    else:
        for name, file in FILES.items():
            try:
                with open(os.path.join(partial, file), "rb") as f:
                    part = runtimes.OnnxPart(f.read(), inputs, class_names)
                entry = Runner(name, part).check(examples, labels, reference)
            except Exception as error:  # ONNX Runtime refuses the graph or an input: say why
                logging.warning("%s cannot run %s: %s", name, file, error)
                why = f"ONNX Runtime failed on the evaluation split: {first_line(error)}"
                entries.append({"name": name, "passed": False, "why": why})
                continue
            entries.append({**entry, "file": file})
    manifest = {
        "model_part": MODEL_PART,
        "inputs": inputs,
        "class_names": list(class_names),
        "checked_on": {"split": "eval", "examples": int(len(labels))},
        "thresholds": {
            "min_agreement": runtimes.MIN_AGREEMENT,
            "max_accuracy_drop": runtimes.MAX_ACCURACY_DROP,
        },
        "runtimes": entries,
        "chosen": fastest(entries),
    }
    folder = os.path.join(export_dir, runtimes.FOLDER)
    tf.io.gfile.makedirs(folder)
    for file in sorted(os.listdir(partial)):
        tf.io.gfile.copy(os.path.join(partial, file), os.path.join(folder, file), overwrite=True)
    shutil.rmtree(partial, ignore_errors=True)
    with tf.io.gfile.GFile(os.path.join(folder, runtimes.MANIFEST), "w") as f:
        f.write(json.dumps(manifest, indent=1))
    for entry in entries:
        say(f"{entry['name']} {runtimes.describe(entry, len(labels))}")
    say("%s serves the model (the fastest that passed)", manifest["chosen"])
    return manifest


def say(message: str, *args) -> None:
    """A line the CLI shows under the Trainer's progress line (as training/progress.py's)."""
    python_logging.getLogger(progress.LOGGER).info("runtimes: " + message, *args)


def evaluation_examples(files: Sequence[str], spec: dict, limit: int) -> Tuple[dict, np.ndarray]:
    """The first `limit` transformed evaluation examples: ({feature: array}, labels)."""
    paths = [path for pattern in files for path in sorted(tf.io.gfile.glob(pattern))]
    compression = "GZIP" if paths and all(p.endswith(".gz") for p in paths) else ""
    dataset = tf.data.TFRecordDataset(paths, compression).take(limit).batch(256)
    batches = [tf.io.parse_example(serialized, spec) for serialized in dataset]
    if not batches:
        raise ValueError(f"no evaluation examples in {list(files)}")
    examples = {
        name: np.concatenate([batch[name].numpy() for batch in batches])
        for name in spec
        if name != features.LABEL
    }
    return examples, np.concatenate([batch[features.LABEL].numpy() for batch in batches])


def saved_model_part(function):
    def run(batch: dict) -> np.ndarray:
        tensors = {name: tf.constant(value) for name, value in batch.items()}
        return function(**tensors)["probabilities"].numpy()

    return run


class Runner:
    """One runtime's model part, checked and timed."""

    def __init__(self, name: str, run):
        self.name, self.run = name, run
        self.predicted: np.ndarray = np.array([])
        self.accuracy = 0.0

    def check(
        self, examples: dict, labels: np.ndarray, reference: Optional["Runner"] = None
    ) -> dict:
        count = len(labels)
        self.run({k: v[:CHECK_BATCH] for k, v in examples.items()})  # traced, warmed up
        started = time.perf_counter()
        predicted = [
            self.run({k: v[i : i + CHECK_BATCH] for k, v in examples.items()}).argmax(-1)
            for i in range(0, count, CHECK_BATCH)
        ]
        seconds = time.perf_counter() - started
        self.predicted = np.concatenate(predicted)
        self.accuracy = float(np.mean(self.predicted == labels))
        entry = {
            "name": self.name,
            "precision": PRECISIONS[self.name],
            "accuracy": round(self.accuracy, 5),
            "p50_ms": round(self.p50_ms(examples), 3),
            "examples_per_second": round(count / seconds, 1),
            "passed": True,
        }
        if reference is None:
            return entry
        agreement = float(np.mean(self.predicted == reference.predicted))
        drop = reference.accuracy - self.accuracy
        entry.update(agreement=round(agreement, 5), accuracy_change=round(-drop, 5) + 0.0)
        if agreement < runtimes.MIN_AGREEMENT:
            entry["why"] = (
                f"its label agreed with the SavedModel's on {agreement:.2%} of {count} "
                f"evaluation examples (at least {runtimes.MIN_AGREEMENT:.1%} needed)"
            )
        elif drop > runtimes.MAX_ACCURACY_DROP:
            entry["why"] = (
                f"its accuracy was {drop * 100:.2f} points below the SavedModel's "
                f"(at most {runtimes.MAX_ACCURACY_DROP * 100:.1f} allowed)"
            )
        entry["passed"] = "why" not in entry
        return entry

    def p50_ms(self, examples: dict) -> float:
        count = len(next(iter(examples.values())))
        times = []
        for call in range(TIMED_CALLS + 3):  # the first three warm up
            i = call % count
            one = {k: v[i : i + 1] for k, v in examples.items()}
            started = time.perf_counter()
            self.run(one)
            times.append(time.perf_counter() - started)
        return statistics.median(times[3:]) * 1000


def fastest(entries: List[dict]) -> str:
    """The passed runtime with the lowest one-example p50."""
    passed = [e for e in entries if e["passed"]]
    return min(passed, key=lambda e: e["p50_ms"])["name"]


def convert(function, path: str) -> Dict[str, str]:
    """tf2onnx on the probabilities of `function` (a signature over Transform's outputs),
    frozen and made float32; returns {Transform's output: the ONNX model's input}."""
    import tf2onnx
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    spec = function.structured_input_signature[1]

    @tf.function(input_signature=[spec])
    def probabilities(transformed):
        return {"probabilities": function(**transformed)["probabilities"]}

    frozen = convert_variables_to_constants_v2(probabilities.get_concrete_function())
    graph_def = float32_graph(frozen.graph.as_graph_def())
    inputs = [tensor.name for tensor in frozen.inputs]
    model, _ = tf2onnx.convert.from_graph_def(
        graph_def,
        input_names=inputs,
        output_names=[tensor.name for tensor in frozen.outputs],
        opset=OPSET,
        output_path=path,
    )
    used = {tensor.name for tensor in model.graph.input}  # tf2onnx drops the unused ones
    return {tensor.split(":")[0]: tensor for tensor in inputs if tensor in used}


def float32_graph(graph_def):
    """`graph_def` with every bfloat16 and float16 type, cast and constant made float32."""

    def fix(node) -> None:
        for attr in node.attr.values():
            if attr.type in HALF_TYPES:
                attr.type = tf.float32.as_datatype_enum
            for i, dtype in enumerate(attr.list.type):
                if dtype in HALF_TYPES:
                    attr.list.type[i] = tf.float32.as_datatype_enum
            if attr.HasField("tensor") and attr.tensor.dtype in HALF_TYPES:
                values = tf.make_ndarray(attr.tensor).astype(np.float32)
                attr.tensor.CopyFrom(tf.make_tensor_proto(values))

    for node in graph_def.node:
        fix(node)
    for function in graph_def.library.function:
        for node in function.node_def:
            fix(node)
    return graph_def


def quantize(folder: str) -> None:
    """ONNX Runtime's dynamic int8 quantization of the float32 model's MatMuls (its CPU
    kernels take no int8 convolution weights: ConvInteger is uint8 only)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Its advice to run its shape-inference pre-processing first goes to the root logger; the
    # checks that follow say whether the model needed it.
    root = python_logging.getLogger()
    level = root.level
    root.setLevel(python_logging.ERROR)
    try:
        quantize_dynamic(
            os.path.join(folder, FILES[runtimes.ONNX_FLOAT32]),
            os.path.join(folder, FILES[runtimes.ONNX_INT8]),
            op_types_to_quantize=["MatMul"],
            weight_type=QuantType.QInt8,
        )
    finally:
        root.setLevel(level)


def first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
