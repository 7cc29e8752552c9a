"""The runtimes that answer a classifier export's raw inputs: the SavedModel itself, or ONNX
Runtime on the model part after the SavedModel's tf.Transform graph (`transform_raw`).

A classifier export holds, beside its SavedModel, a `runtimes/` folder (written and checked on
the evaluation split by onnx_export.py in the Trainer): the model part (`classify_transformed`:
Transform's outputs in, probabilities out) as ONNX, in float32 and int8, and `runtimes.json`,
which says how each one's answers agreed with the SavedModel's, how fast each was, and which
validated one was fastest. `serve`, `predict` and MLflow's loader answer through that one
unless told otherwise (`--runtime`); an export without the folder (the translator's, or one
written before it existed) answers through its SavedModel.

Travels inside every registered MLflow Model beside contract.py: it imports NumPy, and
TensorFlow and ONNX Runtime where they are used, never the rest of this project.
"""

import json
import os
from typing import List, Optional

import numpy as np

try:  # inside this project
    from trainer_module.serving import contract
except ImportError:  # inside a registered MLflow Model: both files are on its code path
    import contract  # type: ignore[no-redef]

FOLDER = "runtimes"  # in the SavedModel's folder
MANIFEST = "runtimes.json"
SAVED_MODEL, ONNX_FLOAT32, ONNX_INT8 = "savedmodel", "onnxruntime", "onnxruntime-int8"
AUTO = "auto"
CHOICES = (AUTO, SAVED_MODEL, ONNX_FLOAT32, ONNX_INT8)
# The signature that runs Transform alone on a raw input, before ONNX Runtime takes over.
TRANSFORM_RAW = "transform_raw"
# `serve --runtime` reaches the model (MLflow's loader) through this variable.
RUNTIME_VARIABLE = "TFXT_SERVE_RUNTIME"
# `serve --threads-per-op` caps ONNX Runtime's intra-op threads too (0: its default).
THREADS_VARIABLE = "TF_NUM_INTRAOP_THREADS"
# What a runtime's answers must keep on the evaluation split to be served (issue 101): the
# SavedModel's label on at least 99.5% of the examples, and accuracy within 0.3 points.
MIN_AGREEMENT = 0.995
MAX_ACCURACY_DROP = 0.003
CHECK_EXAMPLES = 2_000  # the first of the evaluation split's, checked by onnx_export.py


def read_manifest(saved_model_dir: str) -> Optional[dict]:
    """The export's runtimes.json (on any file system TensorFlow's reaches), or None where it
    has none."""
    import tensorflow as tf

    path = os.path.join(saved_model_dir, FOLDER, MANIFEST)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


def validated(manifest: Optional[dict]) -> List[str]:
    """The runtimes the model may be served by: the SavedModel, and each that passed."""
    entries = (manifest or {}).get("runtimes", [])
    return [SAVED_MODEL] + [e["name"] for e in entries if e["name"] != SAVED_MODEL and e["passed"]]


def choose(manifest: Optional[dict], requested: str = AUTO) -> str:
    """The runtime to serve by: `requested`, or with `auto` the manifest's fastest validated
    one (the SavedModel without a manifest). ValueError for one the model lacks or that did
    not pass its check, saying why."""
    if requested not in CHOICES:
        raise ValueError(f"runtime must be one of {CHOICES}, not {requested!r}")
    if requested == AUTO:
        return (manifest or {}).get("chosen", SAVED_MODEL)
    if requested in validated(manifest):
        return requested
    entries = {e["name"]: e for e in (manifest or {}).get("runtimes", [])}
    if requested not in entries:
        raise ValueError(
            f"the model has no {requested} runtime (it has {', '.join(validated(manifest))}): "
            "an export written before runtimes existed, or with serving_runtimes=none"
        )
    raise ValueError(f"the {requested} runtime did not pass its check: {entries[requested]['why']}")


def describe(entry: dict, checked: int) -> str:
    """What a manifest's runtime entry says, after its name: its one-example time and its
    agreement with the SavedModel on `checked` evaluation examples, or why it is not used."""
    if not entry["passed"]:
        return f"not used, {entry['why']}"
    line = f"{entry['p50_ms']:.2f} ms a request"
    if "agreement" in entry:
        line += f", the SavedModel's label on {entry['agreement']:.2%} of {checked:,} evaluation"
        line += " examples"
    return line


class Served:
    """A loaded classifier or translator export answering raw inputs through one runtime:
    `served(values)` gives the raw-input signature's outputs as NumPy arrays."""

    def __init__(self, saved_model, saved_model_dir: str, requested: str = AUTO):
        self.signature = contract.raw_signature(saved_model.signatures)
        self.input = contract.INPUTS[self.signature]
        self.manifest = read_manifest(saved_model_dir)
        if TRANSFORM_RAW not in saved_model.signatures:  # no way to run Transform alone
            self.manifest = None
        self.runtime = choose(self.manifest, requested)
        self.function = saved_model.signatures[self.signature]
        if self.runtime != SAVED_MODEL and self.manifest:
            self.transform = saved_model.signatures[TRANSFORM_RAW]
            self.part = OnnxPart.of(saved_model_dir, self.manifest, self.runtime)

    def __call__(self, values: list) -> dict:
        """The outputs for `values` (raw inputs); TensorFlow's InvalidArgumentError for one
        that the tf.Transform graph cannot take (an image it cannot decode)."""
        import tensorflow as tf

        if self.runtime == SAVED_MODEL:
            outputs = self.function(**{self.input: tf.constant(values)})
            return {name: tensor.numpy() for name, tensor in outputs.items()}
        transformed = self.transform(**{self.input: tf.constant(values)})
        probabilities = self.part({name: t.numpy() for name, t in transformed.items()})
        return self.part.outputs(probabilities)


class OnnxPart:
    """An ONNX model part in ONNX Runtime: Transform's outputs (NumPy) -> probabilities.
    `model`: the ONNX file's bytes; `inputs`: Transform's output name -> the ONNX input's."""

    def __init__(self, model: bytes, inputs: dict, class_names: list):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = int(os.environ.get(THREADS_VARIABLE, 0) or 0)
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.inputs = inputs
        self.class_names = np.array(class_names, dtype=object)

    @classmethod
    def of(cls, saved_model_dir: str, manifest: dict, name: str) -> "OnnxPart":
        """The manifest's runtime `name`, read from the export's runtimes folder."""
        import tensorflow as tf

        (entry,) = [e for e in manifest["runtimes"] if e["name"] == name]
        with tf.io.gfile.GFile(os.path.join(saved_model_dir, FOLDER, entry["file"]), "rb") as f:
            return cls(f.read(), manifest["inputs"], manifest["class_names"])

    def __call__(self, transformed: dict) -> np.ndarray:
        feed = {onnx: transformed[name] for name, onnx in self.inputs.items()}
        (probabilities,) = self.session.run(None, feed)
        return probabilities

    def outputs(self, probabilities: np.ndarray) -> dict:
        """The raw-input signature's outputs from the probabilities (classifier.py's)."""
        label = probabilities.argmax(axis=-1)
        return {
            "probabilities": probabilities,
            "classes": np.broadcast_to(self.class_names, probabilities.shape),
            "label": label,
            "label_name": self.class_names[label],
        }
