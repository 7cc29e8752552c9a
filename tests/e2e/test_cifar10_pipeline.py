"""The CIFAR-10 pipeline end to end through the CLI, on a tiny binary release the test writes,
then `predict --image` on the pushed model with images of other sizes and formats."""
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.e2e.cli_util import cli, pipeline_components
from tests.report.html_util import check_report
from tests.image_util import CLASSES, encode, pattern, write_binary_release

pytestmark = pytest.mark.e2e
COMPONENTS = pipeline_components("ImageExampleGen")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("cifar10")
    write_binary_release(root / "data" / "cifar-10-batches-bin", per_class=10)
    (summary,) = cli("run", "--task", "cifar10", "--data", str(root / "data"), "--output",
                     str(root / "out"), "--preset", "tiny", "--train-steps", "80",
                     "--eval-steps", "2", "--blessing-threshold", "0")
    return summary, root


def test_every_component_ran_and_a_blessed_model_was_pushed(run):
    summary, _ = run
    assert summary["status"] == "succeeded"
    assert set(summary["components"]) == COMPONENTS
    metrics = summary["metrics"]
    assert 0 < metrics["example_count"] < 60  # the seeded 10% of 60 images
    assert 0 <= metrics["sparse_categorical_accuracy"] <= 1
    assert metrics["sparse_top_k_categorical_accuracy"] == 1.0  # k = 3 of 3 classes
    assert summary["blessed"] is True and summary["pushed_model"]
    check_report(summary["report"])  # with attention heatmaps


def test_the_pushed_model_classifies_raw_image_bytes(run, tmp_path):
    summary, _ = run
    paths = []
    for label, (size, format) in enumerate([(32, "PNG"), (48, "JPEG"), (20, "PNG")]):
        paths.append(str(tmp_path / f"{label}.{format.lower()}"))
        with open(paths[-1], "wb") as f:
            f.write(encode(pattern(label, 7, size), format))
    rows = cli("predict", "--model", os.path.dirname(summary["pushed_model"]), "--image", *paths)
    assert [r["image"] for r in rows] == paths
    assert all(r["label"] in CLASSES and r["label"] == CLASSES[r["label_id"]] for r in rows)
    assert all(abs(sum(r["probabilities"]) - 1) < 1e-4 for r in rows)
    served = tf.saved_model.load(summary["pushed_model"]).signatures["classify_image"](
        image=tf.constant([open(p, "rb").read() for p in paths]))
    np.testing.assert_allclose(served["probabilities"].numpy(),
                               [r["probabilities"] for r in rows], atol=1e-5)
