"""The serving runtimes beside a classifier's SavedModel (trainer_module/serving/onnx_export.py
writes them in the Trainer, runtimes.py serves them): what the Trainer wrote, that each ONNX
runtime answers as the SavedModel does, and how a runtime that failed its check, or that an
export lacks, is refused."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import PAIRS, picture
from tests.image_util import encode
from trainer_module.serving import contract, onnx_export, runtimes

TEXTS = ["great fun", "boring mess", "a fun film", "a boring plot"]
ONNX = (runtimes.ONNX_FLOAT32, runtimes.ONNX_INT8)


@pytest.fixture(scope="module")
def classifiers(text_encoder_run, bert_run, vit_run):
    """{family: (export folder, raw inputs)}: the text encoder and the ViT trained in mixed
    bfloat16, BERT in float32."""
    images = [encode(picture("red", 16, 1)), encode(picture("blue", 24, 2), "JPEG")]
    return {
        "text_encoder": (text_encoder_run.export_dir, TEXTS),
        "bert": (bert_run.export_dir, TEXTS),
        "vit": (vit_run.export_dir, images),
    }


def test_the_trainer_wrote_each_classifier_s_onnx_runtimes_checked_on_the_evaluation_split(
    classifiers, text_encoder_run
):
    for family, (export, _) in classifiers.items():
        files = sorted(os.listdir(os.path.join(export, runtimes.FOLDER)))
        assert files == ["model-int8.onnx", "model.onnx", runtimes.MANIFEST], family
        manifest = runtimes.read_manifest(export)
        entries = {e["name"]: e for e in manifest["runtimes"]}
        assert list(entries) == [runtimes.SAVED_MODEL, *ONNX], family
        assert manifest["checked_on"]["examples"] > 0
        for name in ONNX:
            entry = entries[name]
            assert 0 <= entry["agreement"] <= 1 and entry["p50_ms"] > 0, (family, entry)
            assert entry["passed"] == (
                entry["agreement"] >= runtimes.MIN_AGREEMENT
                and entry["accuracy_change"] >= -runtimes.MAX_ACCURACY_DROP
            ), (family, entry)
        fastest = min((e for e in entries.values() if e["passed"]), key=lambda e: e["p50_ms"])
        assert manifest["chosen"] == fastest["name"], family
    # The text encoder's check ran on every evaluation example the fixture wrote.
    manifest = runtimes.read_manifest(text_encoder_run.export_dir)
    written = sum(1 for _ in tf.data.TFRecordDataset(text_encoder_run.fn_args.eval_files))
    assert manifest["checked_on"]["examples"] == written
    assert manifest["class_names"] == ["negative", "positive"]
    assert set(manifest["inputs"]) <= {"token_ids", "ngram_ids", "length_bucket"}


def test_every_onnx_runtime_that_passed_answers_raw_input_as_the_saved_model_does(classifiers):
    for family, (export, values) in classifiers.items():
        model = tf.saved_model.load(export)
        expected = runtimes.Served(model, export, runtimes.SAVED_MODEL)(values)
        for name in runtimes.validated(runtimes.read_manifest(export))[1:]:
            served = runtimes.Served(model, export, name)
            assert served.runtime == name
            outputs = served(values)
            # The ONNX model computes in float32 where the text encoder and the ViT trained in
            # bfloat16, so probabilities agree to bfloat16's precision, labels exactly.
            np.testing.assert_allclose(
                outputs["probabilities"], expected["probabilities"], atol=0.03
            )
            if family == "bert" and name == runtimes.ONNX_FLOAT32:  # trained in float32
                np.testing.assert_allclose(
                    outputs["probabilities"], expected["probabilities"], atol=1e-4
                )
            answers = [contract.answer({k: v[i] for k, v in outputs.items()}) for i in range(2)]
            assert [a["label_id"] for a in answers] == list(expected["label"][:2]), family
            assert answers[0]["classes"] == [c.decode() for c in expected["classes"][0]]


def test_the_model_part_is_made_float32_before_conversion():
    graph = tf.Graph()
    with graph.as_default():
        weights = tf.constant([[1.5, -2.0]], dtype=tf.bfloat16, name="weights")
        tf.cast(tf.matmul(weights, tf.transpose(weights)), tf.float32, name="out")
    converted = onnx_export.float32_graph(graph.as_graph_def())
    types = {
        node.name: {key: attr.type for key, attr in node.attr.items() if attr.type}
        for node in converted.node
    }
    assert types["weights"]["dtype"] == tf.float32.as_datatype_enum
    assert types["out"] == {
        "SrcT": tf.float32.as_datatype_enum,
        "DstT": tf.float32.as_datatype_enum,
    }
    (constant,) = [n for n in converted.node if n.name == "weights"]
    assert tf.make_ndarray(constant.attr["value"].tensor).tolist() == [[1.5, -2.0]]


class Fixed:
    """A model part answering fixed probabilities."""

    def __init__(self, labels):
        self.labels = np.array(labels)

    def __call__(self, batch):
        count = len(next(iter(batch.values())))
        rows = np.arange(count) + batch["row"][0]
        return np.eye(2)[self.labels[rows % len(self.labels)]]


def test_a_runtime_that_changes_labels_or_loses_accuracy_is_refused_and_says_why():
    labels = np.array([0, 1] * 500)
    examples = {"row": np.arange(1000)}
    reference = onnx_export.Runner(runtimes.SAVED_MODEL, Fixed(labels))
    reference.check(examples, labels)
    close = labels.copy()
    close[:4] = 1 - close[:4]  # 99.6% agree: passes agreement, loses 0.4 points
    far = labels.copy()
    far[:6] = 1 - far[:6]  # 99.4% agree
    same = onnx_export.Runner(runtimes.ONNX_FLOAT32, Fixed(labels)).check(
        examples, labels, reference
    )
    assert same["passed"] and same["agreement"] == 1.0
    worse = onnx_export.Runner(runtimes.ONNX_INT8, Fixed(close)).check(examples, labels, reference)
    assert not worse["passed"] and "0.40 points below" in worse["why"]
    changed = onnx_export.Runner(runtimes.ONNX_INT8, Fixed(far)).check(examples, labels, reference)
    assert not changed["passed"] and "99.40% of 1000" in changed["why"]


MANIFEST = {
    "runtimes": [
        {"name": runtimes.SAVED_MODEL, "passed": True, "p50_ms": 2.0},
        {"name": runtimes.ONNX_FLOAT32, "passed": True, "p50_ms": 0.7, "agreement": 1.0},
        {"name": runtimes.ONNX_INT8, "passed": False, "why": "its label agreed on 98.00%"},
    ],
    "chosen": runtimes.ONNX_FLOAT32,
}


def test_auto_serves_the_chosen_runtime_and_a_refused_or_missing_one_cannot_be_asked_for():
    assert runtimes.choose(MANIFEST) == runtimes.ONNX_FLOAT32
    assert runtimes.choose(MANIFEST, runtimes.SAVED_MODEL) == runtimes.SAVED_MODEL
    with pytest.raises(ValueError, match="did not pass its check: its label agreed on 98.00%"):
        runtimes.choose(MANIFEST, runtimes.ONNX_INT8)
    assert runtimes.choose(None) == runtimes.SAVED_MODEL  # an export without runtimes
    with pytest.raises(ValueError, match="has no onnxruntime runtime"):
        runtimes.choose(None, runtimes.ONNX_FLOAT32)
    with pytest.raises(ValueError, match="must be one of"):
        runtimes.choose(MANIFEST, "tensorrt")


def test_the_translator_is_served_by_its_saved_model(translator_run):
    export = translator_run.export_dir
    assert not os.path.exists(os.path.join(export, runtimes.FOLDER))
    served = runtimes.Served(tf.saved_model.load(export), export)
    assert served.runtime == runtimes.SAVED_MODEL
    assert served([PAIRS[3][0]])["translation"][0].decode() == "A child is laughing."


def test_serving_runtimes_none_is_accepted_and_another_value_refused():
    from trainer_module.text_encoder.config import TextEncoderConfig
    from trainer_module.vit.config import VitConfig

    assert TextEncoderConfig(serving_runtimes="none").serving_runtimes == "none"
    with pytest.raises(ValueError, match="serving_runtimes must be one of"):
        VitConfig(serving_runtimes="openvino")


def test_predict_answers_through_the_runtime_asked_for_and_refuses_one_the_export_lacks(
    text_encoder_run, translator_run
):
    def predict(export, *flags):
        command = [sys.executable, "-m", "pipeline.cli", "predict", "--saved-model", export]
        return subprocess.run(
            [*command, *flags, "great fun"], capture_output=True, text=True, timeout=300
        )

    export = text_encoder_run.export_dir
    done = predict(export, "--runtime", runtimes.SAVED_MODEL)
    assert done.returncode == 0, done.stderr[-2000:]
    expected = json.loads(done.stdout)
    for name in runtimes.validated(runtimes.read_manifest(export))[1:]:
        done = predict(export, "--runtime", name)
        assert done.returncode == 0, done.stderr[-2000:]
        answer = json.loads(done.stdout)
        assert (answer["label"], answer["classes"]) == (expected["label"], expected["classes"])
    done = predict(translator_run.export_dir, "--runtime", runtimes.ONNX_INT8)
    assert done.returncode == 2
    assert "has no onnxruntime-int8 runtime" in done.stderr


def test_the_registry_and_the_model_card_record_what_serves_the_model(text_encoder_run):
    from components.model_registry.version import ModelVersion, serving_runtime
    from components.model_registry.vertex_registry import labels
    from components.run_report.report import serving_runtimes

    export = text_encoder_run.export_dir
    chosen = runtimes.read_manifest(export)["chosen"]
    assert serving_runtime(export) == chosen
    version = ModelVersion("m", export, True, {}, "p", "r", "1", {}, serving_runtime=chosen)
    assert version.tags()["serving_runtime"] == labels(version)["serving_runtime"] == chosen

    line = serving_runtimes(MANIFEST | {"checked_on": {"examples": 2000}})
    assert line.startswith(
        "onnxruntime (serves): 0.70 ms a request, the SavedModel's label on 100.00% of 2,000"
    )
    assert "savedmodel: 2.00 ms a request" in line
    assert "onnxruntime-int8: not used, its label agreed on 98.00%" in line
    assert serving_runtimes(None) == ""
