"""Tiny image datasets the tests write themselves: CIFAR-10 binary batches and image folders."""

import io

import numpy as np
from PIL import Image

CLASSES = ["airplane", "automobile", "bird"]


def cifar_record(label: int, pixels: np.ndarray) -> bytes:
    """One binary-release record: the label byte, then the R, G and B planes (32x32 each)."""
    return bytes([label]) + pixels.transpose(2, 0, 1).tobytes()


def pattern(label: int, index: int, size: int = 32) -> np.ndarray:
    """A (size, size, 3) uint8 image that differs by class and index (and is not symmetric)."""
    rows, cols = np.mgrid[0:size, 0:size]
    image = np.stack(
        [(rows * 7 + index) % 256, (cols * 5 + 40 * label) % 256, np.full_like(rows, 80 * label)],
        axis=-1,
    )
    return image.astype(np.uint8)


def write_binary_release(directory, per_class: int = 4, classes=CLASSES, batches: int = 2):
    """data_batch_1.bin ... and batches.meta.txt; returns {(batch name, index): (label, pixels)}."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "batches.meta.txt").write_text("".join(f"{c}\n" for c in classes) + "\n")
    records = {}
    for batch in range(1, batches + 1):
        data = b""
        for index in range(per_class * len(classes)):
            label = index % len(classes)
            pixels = pattern(label, index + 100 * batch)
            records[(f"data_batch_{batch}.bin", index)] = (label, pixels)
            data += cifar_record(label, pixels)
        (directory / f"data_batch_{batch}.bin").write_bytes(data)
    return records


def encode(pixels: np.ndarray, format: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=format)
    return buffer.getvalue()


def write_folders(
    root, splits=("train", "eval"), per_class: int = 3, classes=CLASSES, size: int = 32
):
    """<root>/<split>/<class>/<i>.png (JPEG for every third)."""
    for split in splits:
        for label, name in enumerate(classes):
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for index in range(per_class):
                jpeg = index % 3 == 2
                (folder / f"{index}.{'jpg' if jpeg else 'png'}").write_bytes(
                    encode(pattern(label, index, size), "JPEG" if jpeg else "PNG")
                )
    return root
