"""Every kind of export loads in a fresh process that imports TensorFlow alone (and
tensorflow_text for the WordPiece ops of BERT and the translator, the one import their clients
need), and answers raw input as it did in the process that trained it."""
import json
import subprocess
import sys

import numpy as np
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
        text_encoder_run, translator_run, vit_run, bert_run):
    import base64

    images = [encode(picture("red", 16, 1)), encode(picture("blue", 24, 2), "JPEG")]
    requests = {
        "text_encoder": {"path": text_encoder_run.export_dir, "signature": "classify_text",
                         "input": "text", "inputs": ["great fun", "boring mess"],
                         "output": "probabilities"},
        "bert": {"path": bert_run.export_dir, "signature": "classify_text", "input": "text",
                 "inputs": ["Loved it!", "dull <br />plot"], "output": "probabilities"},
        "translator": {"path": translator_run.export_dir, "signature": "translate",
                       "input": "source", "inputs": [PAIRS[3][0]], "output": "translation"},
        "vit": {"path": vit_run.export_dir, "signature": "classify_image", "input": "image",
                "inputs": [base64.b64encode(i).decode() for i in images],
                "output": "label_name"},
    }
    result = subprocess.run([sys.executable, "-c", SCRIPT], input=json.dumps(requests),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    fresh = json.loads(result.stdout.strip().splitlines()[-1])
    assert fresh["modules"] == []  # no Keras, KerasHub or project code was needed
    answers = fresh["answers"]
    assert answers["translator"] == ["A child is laughing."]  # natural text
    assert answers["vit"] == ["red", "blue"]
    for kind in ("text_encoder", "bert"):
        request = requests[kind]
        here = tf.saved_model.load(request["path"]).signatures["classify_text"](
            text=tf.constant(request["inputs"]))["probabilities"].numpy()
        np.testing.assert_allclose(answers[kind], here, rtol=1e-5, atol=1e-6)
