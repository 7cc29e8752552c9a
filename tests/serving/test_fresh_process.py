"""Every kind of export loads in a fresh process that imports TensorFlow alone (and
tensorflow_text for the WordPiece ops of BERT and the translator, the one import their clients
need), and answers raw input as it did in the process that trained it."""

import json
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import PAIRS, picture
from tests.image_util import encode

SCRIPT = r"""
import base64, json, sys
import tensorflow as tf
requests = json.loads(sys.stdin.read())
answers = {}
for kind, request in requests.items():
    if kind in ("bert", "translator"):
        import tensorflow_text  # noqa: F401  registers the WordPiece ops
    model = tf.saved_model.load(request["path"])
    values = request["inputs"]
    if request["signature"] == "classify_image":
        values = [base64.b64decode(v) for v in values]
    outputs = model.signatures[request["signature"]](**{request["input"]: tf.constant(values)})
    key = request["output"]
    answers[kind] = [v.decode() if isinstance(v, bytes) else v
                     for v in outputs[key].numpy().tolist()]
print(json.dumps({"answers": answers, "modules": sorted(
    m for m in sys.modules if m.split(".")[0] in ("keras", "keras_hub", "trainer_module"))}))
"""


def test_every_export_answers_raw_input_in_a_fresh_tensorflow_process(
    text_encoder_run, translator_run, vit_run, bert_run
):
    import base64

    images = [encode(picture("red", 16, 1)), encode(picture("blue", 24, 2), "JPEG")]
    requests = {
        "text_encoder": {
            "path": text_encoder_run.export_dir,
            "signature": "classify_text",
            "input": "text",
            "inputs": ["great fun", "boring mess"],
            "output": "probabilities",
        },
        "bert": {
            "path": bert_run.export_dir,
            "signature": "classify_text",
            "input": "text",
            "inputs": ["Loved it!", "dull <br />plot"],
            "output": "probabilities",
        },
        "translator": {
            "path": translator_run.export_dir,
            "signature": "translate",
            "input": "source",
            "inputs": [PAIRS[3][0]],
            "output": "translation",
        },
        "vit": {
            "path": vit_run.export_dir,
            "signature": "classify_image",
            "input": "image",
            "inputs": [base64.b64encode(i).decode() for i in images],
            "output": "label_name",
        },
    }
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    fresh = json.loads(result.stdout.strip().splitlines()[-1])
    assert fresh["modules"] == []  # no Keras, KerasHub or project code was needed
    answers = fresh["answers"]
    assert answers["translator"] == ["A child is laughing."]  # natural text
    assert answers["vit"] == ["red", "blue"]
    for kind in ("text_encoder", "bert"):
        request = requests[kind]
        here = (
            tf.saved_model.load(request["path"])
            .signatures["classify_text"](text=tf.constant(request["inputs"]))["probabilities"]
            .numpy()
        )
        np.testing.assert_allclose(answers[kind], here, rtol=1e-5, atol=1e-6)


EVALUATOR_SCRIPT = r"""
import base64, importlib, json, sys
import tensorflow as tf
request = json.loads(sys.stdin.read())
if request["module"]:
    importlib.import_module(request["module"])  # what TFMA's workers import, and nothing else
model = tf.saved_model.load(request["path"])
examples = tf.constant([base64.b64decode(e) for e in request["examples"]])
transformed = model.signatures["transform_features"](examples=examples)
served = model.signatures["serving_default"](examples=examples)
print(json.dumps({"transformed": sorted(transformed), "served": {
    k: v.numpy().tolist() for k, v in served.items() if v.dtype != tf.string}}))
"""


def serialized(features: dict) -> str:
    import base64

    def feature(value):
        if isinstance(value, int):
            return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
        data = value if isinstance(value, bytes) else value.encode("utf-8")
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[data]))

    example = tf.train.Example(
        features=tf.train.Features(
            feature={name: feature(value) for name, value in features.items()}
        )
    )
    return base64.b64encode(example.SerializeToString()).decode()


# A fresh interpreter per family, as TFMA's workers on Dataflow start: minutes in all (slow tier;
# the test above covers a fresh process loading every export in the default tier).
@pytest.mark.slow
@pytest.mark.parametrize("family", ["text_encoder", "bert", "translator", "vit"])
def test_an_evaluator_that_imports_only_the_familys_module_runs_the_export(family, request):
    """TFMA's workers on Dataflow import the family's evaluator module (ModelFamily), load the
    export and call its transform_features and serving_default signatures on tf.Examples."""
    from trainer_module.families import get_family

    run = request.getfixturevalue(f"{family}_run")
    examples = {
        "text_encoder": [{"text": "great fun", "label": 1}],
        "bert": [{"text": "Loved it!", "label": 1}],
        "translator": [{"source": PAIRS[3][0], "target": PAIRS[3][1]}],
        "vit": [{"image": encode(picture("red", 16, 1)), "label": 0, "label_name": "red"}],
    }[family]
    result = subprocess.run(
        [sys.executable, "-c", EVALUATOR_SCRIPT],
        input=json.dumps(
            {
                "module": get_family(family).evaluator_module,
                "path": run.export_dir,
                "examples": [serialized(e) for e in examples],
            }
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["transformed"]  # Transform's outputs, which TFMA slices and labels read
    assert answer["served"]  # the numbers TFMA's metrics read
