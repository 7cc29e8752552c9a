"""Reads images into tf.Examples: `image` (PNG or JPEG bytes), `label` (int), `label_name`, `id`.

The CIFAR-10 binary release's records (1 label byte, then 3,072 pixel bytes: the red, green and
blue planes, each 32x32 row-major) are written out as PNG. Images of any size and aspect are
read as they are (Transform resizes them to image_size; their widths and heights are written
beside them, `image_width` and `image_height`, for the data's statistics). Bad input stops the
run with an error naming the file: a truncated record (file and byte offset), a label byte
outside the class list, an image that does not decode as PNG or JPEG, a class folder not in
the class list, an empty class folder, a CSV row whose label is not a class, a TFRecord that
does not hold tf.Examples with `image`, `label` and `label_name` (file and record).
"""

import io
import itertools
import os
from typing import Any, Dict, Iterator, List, Tuple

import apache_beam as beam
import numpy as np
import tensorflow as tf
from PIL import Image
from tfx.dsl.io import fileio
from tfx.types import standard_component_specs

from components import file_io
from components.dataset_example_gen import LayoutExecutor, read_options, read_split_configs
from components.image_example_gen.layout import (
    BINARY,
    CSV,
    IMAGE_SUFFIXES,
    TFRECORDS,
    ImageDataError,
    detect_layout,
    read_csv_rows,
)
from components.seeded_split import split_by_seeded_hash
from trainer_module import features

CIFAR_SIDE = 32
RECORD_BYTES = 1 + 3 * CIFAR_SIDE * CIFAR_SIDE  # 3,073


def make_example(image: bytes, label: int, label_name: str, image_id: str) -> tf.train.Example:
    """The example of one checked image (`check_image`), with its width and height."""

    def text(value: bytes) -> tf.train.Feature:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    def number(value: int) -> tf.train.Feature:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    with Image.open(io.BytesIO(image)) as opened:  # reads the header only
        width, height = opened.size
    return tf.train.Example(
        features=tf.train.Features(
            feature={
                features.IMAGE: text(image),
                features.IMAGE_LABEL: number(label),
                features.IMAGE_LABEL_NAME: text(label_name.encode("utf-8")),
                features.IMAGE_ID: text(image_id.encode("utf-8")),
                features.IMAGE_WIDTH: number(width),
                features.IMAGE_HEIGHT: number(height),
            }
        )
    )


def encode_png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def read_binary_batch(path: str, class_names: List[str]) -> Iterator[Tuple[bytes, int, str]]:
    """(PNG bytes, label, id) for each record of one CIFAR-10 binary batch file, read one
    record at a time."""
    name = os.path.basename(path)
    with fileio.open(path, "rb") as f:
        for index in itertools.count():
            data = f.read(RECORD_BYTES)
            if not data:
                if index == 0:
                    raise ImageDataError(f"{path}: empty file")
                return
            if len(data) < RECORD_BYTES:
                size = index * RECORD_BYTES + len(data)
                raise ImageDataError(
                    f"{path}: truncated record at byte offset {index * RECORD_BYTES} (the file "
                    f"has {size:,} bytes, not a multiple of the {RECORD_BYTES:,}-byte record)"
                )
            label = data[0]
            if label >= len(class_names):
                raise ImageDataError(
                    f"{path}: record {index} (byte offset {index * RECORD_BYTES}) has label "
                    f"{label}, but there are {len(class_names)} classes"
                )
            planes = np.frombuffer(data, np.uint8)[1:].reshape(3, CIFAR_SIDE, CIFAR_SIDE)
            yield (
                encode_png(planes.transpose(1, 2, 0)),
                label,
                f"{name}:{index}",
            )  # rows x cols x RGB


DECODED_FORMATS = ("PNG", "JPEG")  # what the served model's graph decodes (tf.io.decode_image)


def check_image(path: str, data: bytes) -> None:
    """Raises ImageDataError unless `data` decodes whole as a PNG or JPEG image (of any size:
    Transform resizes it)."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            kind = image.format
    except Exception as error:  # PIL raises many types for a bad file
        raise ImageDataError(f"{path}: not a readable image ({error})") from None
    if kind not in DECODED_FORMATS:
        raise ImageDataError(
            f"{path}: a {kind} image; convert it to PNG or JPEG, the formats the model decodes"
        )


def list_folder_split(
    root: str, split_folder: str, class_names: List[str]
) -> Iterator[Tuple[str, int]]:
    """(path, label) for each image file of `root/split_folder/<class>/`, the folders checked."""
    split_dir = os.path.normpath(os.path.join(root, split_folder))
    if not fileio.isdir(split_dir):
        raise ImageDataError(f"{split_dir}: not a directory")
    folders = sorted(
        n.rstrip("/")
        for n in file_io.listdir(split_dir)
        if fileio.isdir(os.path.join(split_dir, n)) and not n.startswith((".", "_"))
    )
    unknown = [f for f in folders if f not in class_names]
    if unknown:
        raise ImageDataError(
            f"{os.path.join(split_dir, unknown[0])}: unknown class folder "
            f"{unknown[0]!r}; the classes are {class_names}"
        )
    if not folders:
        raise ImageDataError(f"{split_dir}: no class folders")
    for folder in folders:
        class_dir = os.path.join(split_dir, folder)
        files = sorted(
            p
            for p in file_io.glob(os.path.join(class_dir, "*"))
            if p.lower().endswith(IMAGE_SUFFIXES)
        )
        if not files:
            raise ImageDataError(f"{class_dir}: empty class folder (no .png/.jpg/.jpeg files)")
        label = class_names.index(folder)
        for path in files:
            yield path, label


def read_image(path_and_label: Tuple[str, int], root: str) -> Tuple[bytes, int, str]:
    """(image bytes, label, id) of one image file, checked."""
    path, label = path_and_label
    if not file_io.exists(path):
        raise ImageDataError(f"{path}: no such image file")
    data = file_io.read_bytes(path)
    check_image(path, data)
    return data, label, os.path.relpath(path, root)


def list_csv_split(root: str, pattern: str, class_names: List[str]) -> Iterator[Tuple[str, int]]:
    """(path, label) of each row of the split's `path,label` CSV files, labels checked."""
    files = sorted(file_io.glob(os.path.join(root, pattern)))
    if not files:
        raise ImageDataError(f"no CSV files match {os.path.join(root, pattern)}")
    for csv_path in files:
        for path, label, line in read_csv_rows(csv_path):
            if label not in class_names:
                raise ImageDataError(
                    f"{csv_path}:{line}: unknown label {label!r}; the classes are {class_names}"
                )
            yield path, class_names.index(label)


def list_files(pattern: str) -> List[str]:
    return sorted(file_io.glob(pattern))


def check_record(path_and_record: Tuple[str, bytes]) -> tf.train.Example:
    """A TFRecord's tf.Example, with a bytes `image`, an int `label` and a bytes `label_name`;
    an error naming the file otherwise."""
    path, record = path_and_record
    try:
        example = tf.train.Example.FromString(record)
    except Exception:  # protobuf's DecodeError
        raise ImageDataError(f"{path}: a record that is not a tf.Example") from None
    found = example.features.feature
    for name, kind in (
        (features.IMAGE, "bytes_list"),
        (features.IMAGE_LABEL, "int64_list"),
        (features.IMAGE_LABEL_NAME, "bytes_list"),
    ):
        if name not in found or len(getattr(found[name], kind).value) != 1:
            raise ImageDataError(
                f"{path}: a tf.Example without one {kind.split('_')[0]} "
                f"{name!r} (it has {sorted(found)})"
            )
    return example


class Executor(LayoutExecutor):
    """Images -> tf.Examples, with a seeded hash split when the data has no eval split."""

    def detect_layout(self, data_dir: str, options: dict):
        return detect_layout(data_dir, int(options["eval_percent"]))

    def layout_options(self, layout) -> dict:
        return {"format": layout.format, "class_names": layout.class_names}

    def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
        raise NotImplementedError("read_splits reads the images itself")

    def read_splits(
        self, pipeline, exec_properties: Dict[str, Any]
    ) -> Dict[str, beam.pvalue.PCollection]:
        input_config, output_config = read_split_configs(exec_properties)
        options = read_options(exec_properties)
        root = exec_properties[standard_component_specs.INPUT_BASE_KEY]
        class_names = list(options["class_names"])
        splits = {}
        # Only the split's pattern enters the Beam graph: the files are listed, read, decoded
        # and checked by the workers (one binary batch, or one image, per element).
        for split in input_config.splits:
            pattern = pipeline | f"Pattern{split.name}" >> beam.Create([split.pattern])
            if options["format"] == TFRECORDS:
                splits[split.name] = (
                    pattern
                    | f"Path{split.name}" >> beam.Map(lambda p: os.path.join(root, p))
                    | f"ReadRecords{split.name}" >> beam.io.ReadAllFromTFRecord(with_filename=True)
                    | f"Check{split.name}" >> beam.Map(check_record)
                )
                continue
            if options["format"] == BINARY:
                rows = (
                    pattern
                    | f"List{split.name}"
                    >> beam.FlatMap(lambda p: list_files(os.path.join(root, p)))
                    | f"Spread{split.name}" >> beam.Reshuffle()
                    | f"ReadBatches{split.name}" >> beam.FlatMap(read_binary_batch, class_names)
                )
            else:
                lister = list_csv_split if options["format"] == CSV else list_folder_split
                rows = (
                    pattern
                    | f"List{split.name}"
                    >> beam.FlatMap(lambda p, lister=lister: lister(root, p, class_names))
                    | f"Spread{split.name}" >> beam.Reshuffle()
                    | f"ReadImages{split.name}" >> beam.Map(read_image, root)
                )
            splits[split.name] = rows | f"ToExample{split.name}" >> beam.MapTuple(
                lambda image, label, image_id: make_example(
                    image, label, class_names[label], image_id
                )
            )
        if not output_config.split_config.splits:
            return splits
        return split_by_seeded_hash(
            splits["train"], input_config, output_config, int(options["split_seed"])
        )
