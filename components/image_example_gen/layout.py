"""Finds which image-dataset layout a data directory holds, when the ExampleGen runs.

- The CIFAR-10 binary release: `data_batch_*.bin` (+ `batches.meta.txt`, the class names), as
  unpacked from cifar-10-binary.tar.gz, in the directory or its `cifar-10-batches-bin/`.
- Image folders: `<split>/<class_name>/*.png|jpg|jpeg` (train + val/valid/validation/dev/eval
  keep their split, test too), or `<class_name>/*` directly; class names come from `classes.txt`
  when present, else from the train split's folders.
- TFRecords of tf.Example (`image`, `label`, `label_name`): `train/` (+ `eval/`) folders of
  `*.tfrecord*` files, or such files directly in the directory (all of them `train`).
- CSV files with a `path,label` header, each path relative to the CSV's folder (or absolute):
  `train.csv` + `test.csv` (or `eval.csv`) keep their split, any other `*.csv` are split by
  seeded hash; the class names are `classes.txt`'s when present, else the labels sorted.
Images may be of any size and aspect (Transform resizes them); only what does not decode as a
PNG or JPEG image is refused, by file.
`test_batch.bin` is not read: it is the test set, held back from training and model selection.
The Python-pickle release is refused (unpickling a downloaded file can run arbitrary code).
"""

import csv
import dataclasses
import io
import os
from typing import List

from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2

from components import file_io
from components.data_error import DataError
from components.seeded_split import SPLIT_NAMES, hash_split_config

BINARY = "cifar10_binary"
FOLDERS = "image_folders"
TFRECORDS = "tfrecords"
CSV = "image_csv"
CSV_COLUMNS = ("path", "label")
TFRECORD_SUFFIXES = (".tfrecord", ".tfrecord.gz", ".tfrecords", ".tfrecords.gz")
BINARY_SUBDIR = "cifar-10-batches-bin"
BINARY_PATTERN = "data_batch_*.bin"
BINARY_META = "batches.meta.txt"
CLASSES_FILE = "classes.txt"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
PICKLE_NAMES = ("data_batch_1", "batches.meta", "cifar-10-python.tar.gz", "cifar-10-batches-py")


class ImageDataError(DataError):
    """Image data that cannot be read as it is (components/data_error.py)."""


@dataclasses.dataclass(frozen=True)
class ImageLayout:
    root: str  # the ExampleGen's input_base
    format: str  # BINARY or FOLDERS
    class_names: List[str]
    input_config: example_gen_pb2.Input
    output_config: example_gen_pb2.Output


def _names(directory: str) -> List[str]:
    return sorted(os.path.basename(p.rstrip("/")) for p in file_io.listdir(directory))


def _is_dir(root: str, name: str) -> bool:
    return fileio.isdir(os.path.join(root, name))


def read_class_names(path: str) -> List[str]:
    """One class name per non-empty line (CIFAR's batches.meta.txt, or classes.txt)."""
    with fileio.open(path, "rb") as f:
        data = f.read()
    try:
        names = [line.strip() for line in data.decode("utf-8").splitlines() if line.strip()]
    except UnicodeDecodeError as error:
        raise ImageDataError(f"{path}: not UTF-8 text at byte {error.start}") from None
    if not names:
        raise ImageDataError(f"{path}: no class names")
    if len(set(names)) != len(names):
        raise ImageDataError(f"{path}: repeated class names in {names}")
    return names


def _refuse_pickle(data_dir: str, names: List[str]) -> None:
    found = [n for n in names if n in PICKLE_NAMES]
    if found:
        raise ImageDataError(
            f"{os.path.join(data_dir, found[0])}: this is the Python-pickle release of CIFAR-10, "
            "which is not read: unpickling a downloaded file can run arbitrary code. Use the "
            "binary release instead (cifar-10-binary.tar.gz from "
            "https://www.cs.toronto.edu/~kriz/cifar.html, unpacked: data_batch_1.bin ...)."
        )


def _split_input(splits: dict, eval_percent: int):
    """(input, output) configs: named train + eval splits kept, a lone train hash-split."""
    if "train" not in splits:
        raise ImageDataError(f"no 'train' split among {sorted(splits)}")
    if "eval" in splits:
        return (
            example_gen_pb2.Input(
                splits=[
                    example_gen_pb2.Input.Split(name=name, pattern=splits[name])
                    for name in ("train", "eval", "test")
                    if name in splits
                ]
            ),
            example_gen_pb2.Output(),
        )
    return (
        example_gen_pb2.Input(
            splits=[example_gen_pb2.Input.Split(name="train", pattern=splits["train"])]
        ),
        hash_split_config(eval_percent),
    )


def _tfrecord_patterns(data_dir: str, names: List[str]) -> dict:
    """Split -> pattern of the TFRecord files: in the directory itself (all `train`), or in
    split folders; empty when there are none."""

    def records(names):
        return [n for n in names if n.endswith(TFRECORD_SUFFIXES)]

    if records(names):
        return {"train": "*.tfrecord*"}
    splits = {}
    for name in names:
        if (
            name in SPLIT_NAMES
            and _is_dir(data_dir, name)
            and records(_names(os.path.join(data_dir, name)))
        ):
            splits[SPLIT_NAMES[name]] = f"{name}/*.tfrecord*"
    return splits


def detect_layout(data_dir: str, eval_percent: int) -> ImageLayout:
    """The layout under `data_dir` (see the module docstring)."""
    if not fileio.isdir(data_dir):
        raise FileNotFoundError(f"image data directory not found: {data_dir}")
    names = _names(data_dir)
    _refuse_pickle(data_dir, names)
    if BINARY_SUBDIR in names:
        return detect_layout(os.path.join(data_dir, BINARY_SUBDIR), eval_percent)
    if any(n.startswith("data_batch_") and n.endswith(".bin") for n in names):
        if BINARY_META not in names:
            raise ImageDataError(
                f"{os.path.join(data_dir, BINARY_META)}: missing; the binary "
                "release lists its class names there"
            )
        input_config, output_config = _split_input({"train": BINARY_PATTERN}, eval_percent)
        return ImageLayout(
            data_dir,
            BINARY,
            read_class_names(os.path.join(data_dir, BINARY_META)),
            input_config,
            output_config,
        )
    records = _tfrecord_patterns(data_dir, names)
    if records:
        input_config, output_config = _split_input(records, eval_percent)
        return ImageLayout(data_dir, TFRECORDS, [], input_config, output_config)
    csv_files = [n for n in names if n.endswith(".csv")]
    if csv_files:
        return _csv_layout(data_dir, names, csv_files, eval_percent)
    folders = [n for n in names if _is_dir(data_dir, n) and not n.startswith((".", "_"))]
    splits = {SPLIT_NAMES[n]: n for n in folders if n in SPLIT_NAMES}
    if not splits:
        if not folders:
            raise ImageDataError(
                f"{data_dir}: no images found. Expected the CIFAR-10 binary release "
                f"({BINARY_PATTERN}, {BINARY_META}) or folders <split>/<class_name>/*.png|jpg"
            )
        splits = {"train": "."}  # class folders directly under data_dir
    if CLASSES_FILE in names:
        class_names = read_class_names(os.path.join(data_dir, CLASSES_FILE))
    else:
        train_dir = os.path.normpath(os.path.join(data_dir, splits["train"]))
        class_names = [
            n for n in _names(train_dir) if _is_dir(train_dir, n) and not n.startswith((".", "_"))
        ]
        if not class_names:
            raise ImageDataError(f"{train_dir}: no class folders")
    input_config, output_config = _split_input(splits, eval_percent)
    return ImageLayout(data_dir, FOLDERS, class_names, input_config, output_config)


def read_csv_rows(path: str) -> List[tuple]:
    """(image path, label, line) of each row of a `path,label` CSV file, checked; image paths
    relative to the CSV's folder are made absolute."""
    with fileio.open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as error:
        raise ImageDataError(f"{path}: not UTF-8 text at byte {error.start}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if reader.fieldnames is None or not set(CSV_COLUMNS) <= set(reader.fieldnames):
        raise ImageDataError(
            f"{path}: CSV header must name 'path' and 'label' columns, found {reader.fieldnames}"
        )
    rows = []
    try:
        for row in reader:
            image, label = (row["path"] or "").strip(), (row["label"] or "").strip()
            where = f"{path}:{reader.line_num}"
            if not image or not label:
                raise ImageDataError(f"{where}: a row needs a path and a label")
            if "://" not in image and not os.path.isabs(image):
                image = os.path.join(os.path.dirname(path), image)
            rows.append((image, label, reader.line_num))
    except csv.Error as error:
        raise ImageDataError(f"{path}:{reader.line_num}: not readable as CSV ({error})") from None
    if not rows:
        raise ImageDataError(f"{path}: CSV file has no images")
    return rows


def _csv_layout(data_dir: str, names: List[str], csv_files: List[str], eval_percent: int):
    given = {n[: -len(".csv")]: n for n in csv_files}
    splits = {SPLIT_NAMES[n]: f for n, f in given.items() if n in SPLIT_NAMES}
    if "train" not in splits:
        splits = {"train": "*.csv"}
    if CLASSES_FILE in names:
        class_names = read_class_names(os.path.join(data_dir, CLASSES_FILE))
    else:
        labels = {
            label
            for name in csv_files
            for _, label, _ in read_csv_rows(os.path.join(data_dir, name))
        }
        if len(labels) < 2:
            raise ImageDataError(
                f"{data_dir}: the CSV files name {len(labels)} label(s) {sorted(labels)}; a "
                "classifier needs two or more classes"
            )
        class_names = sorted(labels)
    input_config, output_config = _split_input(splits, eval_percent)
    return ImageLayout(data_dir, CSV, class_names, input_config, output_config)
