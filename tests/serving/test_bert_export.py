import json
import subprocess
import sys

import numpy as np
import tensorflow as tf

from tests.tft_util import analyze_and_transform
from trainer_module.models.bert_classifier import build_bert_classifier
from trainer_module.models.bert_presets import get_preset
from trainer_module.preprocessing import bert
from trainer_module.serving.text_classifier import export_text_classifier
from trainer_module.training.bert_classification import bert_inputs

ROWS = [{"text": "great fun", "label": 1}, {"text": "awful and dull", "label": 0}]
LOAD_AND_CLASSIFY = """
import sys, json
import tensorflow as tf
import tensorflow_text  # registers the WordPiece ops; the only import a client needs
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["classify_text"](text=tf.constant(["Loved it!", "dull <br />plot"]))
print(json.dumps(out["probabilities"].numpy().tolist()))
"""


def test_exported_bert_classifies_raw_text_in_a_fresh_process(tiny_bert_preset, tmp_path):
    _, output = analyze_and_transform(
        ROWS, {"backbone_preset": tiny_bert_preset, "sequence_length": 16},
        str(tmp_path / "transform"), preprocessing_fn=bert.preprocessing_fn)
    model = build_bert_classifier(get_preset("tiny", {"backbone_preset": tiny_bert_preset,
                                                      "sequence_length": 16}))
    export_dir = str(tmp_path / "export")
    export_text_classifier(model, output, export_dir, model_inputs=bert_inputs)

    result = subprocess.run([sys.executable, "-c", LOAD_AND_CLASSIFY, export_dir],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    served = np.array(json.loads(result.stdout.strip().splitlines()[-1]))

    # The same probabilities as the model on tf.Transform's packing of the same strings.
    loaded = tf.saved_model.load(export_dir)
    transformed = output.transform_features_layer()(
        {"text": tf.constant(["Loved it!", "dull <br />plot"])})
    expected = tf.nn.softmax(model(bert_inputs(transformed), training=False)).numpy()
    np.testing.assert_allclose(served, expected, rtol=1e-5, atol=1e-6)
    assert set(loaded.signatures) >= {"serving_default", "classify_text", "transform_features"}
