"""The CIFAR-10 pipeline end to end through the CLI, on a tiny binary release of five classes
the test writes, then `predict --image` with images of other sizes and formats."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.e2e.cli_util import pipeline_components, run_cli
from tests.image_util import encode, pattern, write_binary_release
from tests.report.html_util import check_report
from trainer_module.serving import runtimes

# Each of these runs its own pipeline: the slow tier (the IMDB run is the default tier's).
pytestmark = [pytest.mark.e2e, pytest.mark.slow]
COMPONENTS = pipeline_components("ImageExampleGen", registry=False)
CLASSES = ["airplane", "automobile", "bird", "cat", "deer"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("cifar10")
    write_binary_release(root / "data" / "cifar-10-batches-bin", per_class=12, classes=CLASSES)
    (summary,) = run_cli(
        "run",
        "--task",
        "cifar10",
        "--data",
        root / "data",
        "--output",
        root / "out",
        "--preset",
        "tiny",
        "--train-steps",
        "120",
        "--eval-steps",
        "2",
        "--blessing-threshold",
        "0.4",
        "--registry",
        "none",
    ).lines
    return summary


def test_every_component_ran_and_a_model_well_above_chance_was_pushed(run):
    assert run["status"] == "succeeded"
    assert set(run["components"]) == COMPONENTS
    metrics = run["metrics"]
    assert 0 < metrics["example_count"] < 120 * 0.2  # the seeded 10% of 120 images
    # Five classes: chance is 0.2 (top-3: 0.6); the classes differ by colour.
    assert metrics["sparse_categorical_accuracy"] >= 0.4
    assert metrics["sparse_top_k_categorical_accuracy"] > 0.6
    assert run["blessed"] is True and run["pushed_model"]
    check_report(run["report"])  # with attention heatmaps


def test_the_pushed_model_classifies_raw_image_bytes(run, tmp_path):
    paths = []
    for label, (size, format) in enumerate([(32, "PNG"), (48, "JPEG"), (20, "PNG")]):
        paths.append(str(tmp_path / f"{label}.{format.lower()}"))
        with open(paths[-1], "wb") as f:
            f.write(encode(pattern(label, 7, size), format))
    rows = run_cli(
        "predict", "--saved-model", os.path.dirname(run["pushed_model"]), "--image", *paths
    ).lines
    assert [r["image"] for r in rows] == paths
    assert all(r["label"] in CLASSES and r["label"] == CLASSES[r["label_id"]] for r in rows)
    assert all(r["classes"] == list(CLASSES) for r in rows)
    assert all(abs(sum(r["probabilities"]) - 1) < 1e-4 for r in rows)
    served = answered(run["pushed_model"], [open(p, "rb").read() for p in paths])
    np.testing.assert_allclose(served, [r["probabilities"] for r in rows], atol=1e-5)


def test_infer_classifies_a_folder_of_images_of_any_size(run, tmp_path):
    from tests.e2e.cli_util import copy_output

    # <output>/serving_model/<pipeline>/<version>
    output = copy_output(
        os.path.dirname(os.path.dirname(os.path.dirname(run["pushed_model"]))), tmp_path / "out"
    )
    folder = tmp_path / "images"
    folder.mkdir()
    for label, (size, format) in enumerate([(32, "PNG"), (48, "JPEG")]):
        (folder / f"{label}.{format.lower()}").write_bytes(encode(pattern(label, 3, size), format))
    # The run on a folder of its own is named after it: infer names that pipeline.
    name = ["--pipeline-name", run["pipeline_name"]]
    (summary,) = run_cli(
        "infer", "--task", "cifar10", "--data", folder, "--output", output, *name
    ).lines
    rows = {
        row["id"]: row
        for path in summary["prediction_files"]
        for row in map(json.loads, open(path))
    }
    assert sorted(rows) == ["0.png", "1.jpeg"]
    served = tf.saved_model.load(run["pushed_model"]).signatures["classify_image"](
        image=tf.constant([(folder / name).read_bytes() for name in sorted(rows)])
    )
    # The same SavedModel through two signatures (tf.Examples, raw bytes): in mixed bfloat16
    # each graph's fusions and matrix shapes round differently, by about 1e-3.
    np.testing.assert_allclose(
        [rows[name]["probabilities"] for name in sorted(rows)],
        served["probabilities"].numpy(),
        atol=5e-3,
    )
    assert [rows[name]["label"] for name in sorted(rows)] == [
        CLASSES[i] for i in served["label"].numpy()
    ]


def test_predict_input_answers_each_image_line_and_an_undecodable_one_alone(run, tmp_path):
    import base64
    import json

    good = [encode(pattern(label, 3, 32), "PNG") for label in range(2)]
    broken = good[0][:40] + b"not the rest of a PNG"  # a PNG header, then garbage
    lines = [
        {"image": base64.b64encode(good[0]).decode()},
        {"image": base64.b64encode(broken).decode()},
        {"image": "%%% not base64"},
        {"image": base64.b64encode(good[1]).decode()},
    ]
    path = tmp_path / "images.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = run_cli("predict", "--saved-model", run["pushed_model"], "--input", path, check=False)
    answers = result.lines
    assert result.code == 1 and [a["line"] for a in answers] == [1, 2, 3, 4]
    assert "error" in answers[1]  # TensorFlow's decoder refused it; the others were answered
    assert answers[2]["error"] == "'image': a string image must be base64"
    np.testing.assert_allclose(
        [answers[0]["probabilities"], answers[3]["probabilities"]],
        answered(run["pushed_model"], good),
        atol=1e-5,
    )


def answered(pushed: str, images: list):
    """The pushed model's probabilities through the runtime `predict` answers with (the
    fastest that passed its check: trainer_module/serving/runtimes.py)."""
    return runtimes.Served(tf.saved_model.load(pushed), pushed)(images)["probabilities"]
