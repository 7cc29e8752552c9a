"""Packages a pushed SavedModel as an MLflow Model: `MLmodel`, the pyfunc code
(pyfunc_model.py) with the served-model contract and the runtimes on its code path
(trainer_module/serving/contract.py, runtimes.py), a copy of the SavedModel (with its ONNX
runtimes), a signature of the task's raw input, an input example and the pinned requirements
of the serving stack.
`mlflow.pyfunc.load_model` and `mlflow models serve` then answer raw input with it."""

import importlib.metadata
import io
import os
from typing import List

from components.model_registry import pyfunc_model
from trainer_module.serving import contract, runtimes

PYFUNC_CODE = pyfunc_model.__file__
# What loading and serving the model needs, at the versions this project runs.
SERVING_PACKAGES = ("mlflow", "tensorflow", "tensorflow-text", "onnxruntime", "pandas", "numpy")
TEXT_EXAMPLES = ["A moving story, beautifully acted.", "Two hours I will never get back."]
SOURCE_EXAMPLES = ["Ein Mann fährt Fahrrad.", "Zwei Kinder spielen im Park."]


def raw_signature(saved_model_dir: str) -> str:
    """The SavedModel's raw-input signature (classify_text, classify_image or translate), read
    from saved_model.pb without loading the model."""
    from tensorflow.core.protobuf import saved_model_pb2
    from tfx.dsl.io import fileio

    path = os.path.join(saved_model_dir, "saved_model.pb")
    if not fileio.exists(path):
        raise FileNotFoundError(f"{saved_model_dir}: not a SavedModel (no saved_model.pb)")
    saved_model = saved_model_pb2.SavedModel()
    with fileio.open(path, "rb") as f:
        saved_model.ParseFromString(f.read())
    try:
        return contract.raw_signature(saved_model.meta_graphs[0].signature_def)
    except contract.BadInput as error:
        raise ValueError(f"{saved_model_dir}: {error}") from None


def example_image() -> bytes:
    """A 32x32 PNG (a colour gradient): the image model's input example."""
    import numpy as np
    from PIL import Image

    ramp = np.linspace(0, 255, 32, dtype=np.uint8)
    pixels = np.stack(np.broadcast_arrays(ramp[:, None], ramp[None, :], 128), axis=-1)
    buffer = io.BytesIO()
    Image.fromarray(pixels.astype(np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def input_example(signature: str):
    import pandas as pd

    name = contract.INPUTS[signature]
    values = {
        contract.CLASSIFY_TEXT: TEXT_EXAMPLES,
        contract.TRANSLATE: SOURCE_EXAMPLES,
        contract.CLASSIFY_IMAGE: [example_image()],
    }[signature]
    return pd.DataFrame({name: values})


def model_signature(signature: str):
    from mlflow.models import ModelSignature
    from mlflow.types.schema import Array, ColSpec, DataType, Schema

    name = contract.INPUTS[signature]
    inputs = Schema([ColSpec(DataType.binary if name == "image" else DataType.string, name)])
    if signature == contract.TRANSLATE:
        outputs = Schema([ColSpec(DataType.string, "translation")])
    else:
        outputs = Schema(
            [
                ColSpec(DataType.string, "label"),
                ColSpec(DataType.long, "label_id"),
                ColSpec(Array(DataType.string), "classes"),
                ColSpec(Array(DataType.double), "probabilities"),
            ]
        )
    return ModelSignature(inputs=inputs, outputs=outputs)


def requirements() -> List[str]:
    return [f"{name}=={importlib.metadata.version(name)}" for name in SERVING_PACKAGES]


def save(saved_model_dir: str, path: str) -> str:
    """Writes the MLflow Model for `saved_model_dir` to the local folder `path` (which must not
    exist); returns its raw-input signature."""
    import mlflow

    signature = raw_signature(saved_model_dir)
    mlflow.pyfunc.save_model(
        path,
        python_model=PYFUNC_CODE,
        code_paths=[contract.__file__, runtimes.__file__],
        artifacts={pyfunc_model.SAVED_MODEL: saved_model_dir},
        signature=model_signature(signature),
        input_example=input_example(signature),
        pip_requirements=requirements(),
    )
    return signature
