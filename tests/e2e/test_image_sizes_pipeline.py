"""A folder of photos of every size, aspect and mode (the usual `train/<class>/*.jpg` of a
user's own set), and the same images listed in a `path,label` CSV, through the image task's
pipeline end to end: read as they are, resized by Transform, trained, pushed, and answering
raw bytes of yet other sizes.

The slow tier (a pipeline run each). The default tier covers the reading
(tests/components/test_image_example_gen.py) and the resizing (tests/vit/)."""

import io

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from tests.e2e.cli_util import run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
SIZES = [(32, 32), (64, 48), (23, 71), (120, 90), (40, 40), (17, 33)]


def photo(bright: bool, width: int, height: int, mode: str, seed: int) -> Image.Image:
    """Bright or dark noise: the two classes."""
    generator = np.random.default_rng(seed)
    base = 200 if bright else 40
    pixels = np.clip(base + generator.normal(0, 25, (height, width, 3)), 0, 255).astype(np.uint8)
    return Image.fromarray(pixels).convert(mode)


def write_photos(root) -> list:
    """root/<split>/<class>/: every size of SIZES in JPEG (RGB, grey) and PNG (RGBA); returns
    (relative path, class) of each."""
    rows = []
    for split, copies in (("train", 4), ("val", 1)):
        for name in ("bright", "dark"):
            folder = root / split / name
            folder.mkdir(parents=True)
            for copy in range(copies):
                for index, (width, height) in enumerate(SIZES):
                    mode = ("RGB", "L", "RGBA")[index % 3]
                    suffix, kind = ("png", "PNG") if mode == "RGBA" else ("jpg", "JPEG")
                    path = folder / f"{copy}-{index}.{suffix}"
                    seed = hash((split, name, copy, index)) % 2**32
                    photo(name == "bright", width, height, mode, seed).save(path, format=kind)
                    rows.append((f"{split}/{name}/{path.name}", name))
    return rows


def encoded(bright: bool, size, kind: str) -> bytes:
    buffer = io.BytesIO()
    photo(bright, *size, "RGB", seed=7).save(buffer, format=kind)
    return buffer.getvalue()


@pytest.mark.parametrize("layout", ["folders", "csv"])
def test_photos_of_any_size_train_push_and_answer_raw_bytes(layout, tmp_path):
    data = tmp_path / "photos"
    rows = write_photos(data)
    if layout == "csv":  # the same images, listed; the folders are then only where they lie
        lines = [f"{path},{name}" for path, name in rows]
        (data / "images.csv").write_text("path,label\n" + "\n".join(lines) + "\n", "utf-8")
    (summary,) = run_cli(
        "run",
        "--task",
        "cifar10",
        "--data",
        data,
        "--output",
        tmp_path / "out",
        "--preset",
        "tiny",
        "--image-size",
        "16",
        "--train-steps",
        "60",
        "--eval-steps",
        "2",
        "--registry",
        "none",
        "--blessing-threshold",
        "0.5",
    ).lines
    assert summary["blessed"] is True, summary["blessing_failures"]
    model = tf.saved_model.load(summary["pushed_model"])
    images = [encoded(True, (300, 200), "JPEG"), encoded(False, (9, 13), "PNG")]
    answer = model.signatures["classify_image"](image=tf.constant(images))
    assert [n.decode() for n in answer["label_name"].numpy()] == ["bright", "dark"]
