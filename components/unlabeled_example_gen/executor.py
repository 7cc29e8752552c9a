"""Raw inputs without labels -> tf.Examples of the task's raw feature and an `id`.

The files directly in the folder, by suffix:
  *.jsonl        one input per line, as `tfx-transformers predict --input` reads them:
                 {"text": ...}, {"source": ...} or {"image": base64}; id `<file>:<line>`
  *.txt          text: a whole review per file (feature `text`, id `<file>`), or one source
                 sentence per non-empty line (feature `source`, id `<file>:<line>`)
  *.png, *.jpg, *.jpeg
                 an image per file (feature `image`, id `<file>`)
Other files are ignored. A bad input stops the run with an error naming the file and line:
it is not scored, and nothing is skipped silently.
"""

import io
import os
from typing import Any, Dict, Iterator, Tuple

import apache_beam as beam
import tensorflow as tf
from PIL import Image
from tfx.components.example_gen.base_example_gen_executor import BaseExampleGenExecutor
from tfx.dsl.io import fileio
from tfx.types import standard_component_specs

from components import file_io
from components.dataset_example_gen import read_options
from components.image_example_gen.layout import IMAGE_SUFFIXES
from components.text_profile import text_profile
from trainer_module import features
from trainer_module.serving.contract import BadInput, parse_line

SPLIT = features.UNLABELED_SPLIT
JSON_LINES, TEXT = ".jsonl", ".txt"
# The raw feature -> the suffixes it is read from.
READERS = {
    features.TEXT: (JSON_LINES, TEXT),
    features.SOURCE: (JSON_LINES, TEXT),
    features.IMAGE: (JSON_LINES, *IMAGE_SUFFIXES),
}


class UnlabeledDataError(ValueError):
    """An input that cannot be scored, named by file (and line)."""


def list_inputs(folder: str, feature: str) -> list:
    """The folder's files that hold `feature`'s inputs, sorted; an error when there are none."""
    if not fileio.isdir(folder):
        raise UnlabeledDataError(f"{folder}: not a directory")
    paths = sorted(os.path.join(folder, name.rstrip("/")) for name in file_io.listdir(folder))
    found = [p for p in paths if p.lower().endswith(READERS[feature]) and not fileio.isdir(p)]
    if not found:
        raise UnlabeledDataError(
            f"{folder}: no input files for {feature!r} (expected "
            f"{', '.join('*' + s for s in READERS[feature])})"
        )
    return found


def read_inputs(path: str, feature: str) -> Iterator[Tuple[str, bytes]]:
    """(id, raw value) for each input in the file at `path`."""
    name = os.path.basename(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix in IMAGE_SUFFIXES:
        yield name, check_image(path, file_io.read_bytes(path))
        return
    data = file_io.read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnlabeledDataError(
            f"{path}: not valid UTF-8 at byte {error.start} "
            f"({data[error.start : error.start + 4]!r}); re-encode the file "
            "as UTF-8"
        ) from None
    if suffix == TEXT and feature == features.TEXT:
        if not text.strip():
            raise UnlabeledDataError(f"{path}: the text is empty")
        yield name, text.encode("utf-8")
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if suffix == TEXT:
            yield f"{name}:{number}", line.strip().encode("utf-8")
            continue
        try:
            value = parse_line(line, feature)
        except BadInput as error:
            raise UnlabeledDataError(f"{path}: line {number}: {error}") from None
        if isinstance(value, bytes):
            yield f"{name}:{number}", check_image(f"{path}: line {number}", value)
        else:
            yield f"{name}:{number}", value.encode("utf-8")


def check_image(where: str, data: bytes) -> bytes:
    """`data` if it decodes as an image (of any size: serving resizes), else an error."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except Exception as error:  # PIL raises many types for a bad file
        raise UnlabeledDataError(f"{where}: not a readable image ({error})") from None
    return data


def make_example(feature: str, input_id: str, value: bytes) -> tf.train.Example:
    """The raw feature, the id and, for a text, its profile (as the training data has it)."""

    def text(data: bytes) -> tf.train.Feature:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[data]))

    profile = (
        text_profile(value.decode("utf-8"), *features.PROFILES[feature])
        if feature in features.PROFILES
        else {}
    )
    return tf.train.Example(
        features=tf.train.Features(
            feature={
                feature: text(value),
                features.EXAMPLE_ID: text(input_id.encode("utf-8")),
                **profile,
            }
        )
    )


class Executor(BaseExampleGenExecutor):
    """Lists the folder, then reads each file inside Beam (one file per element)."""

    def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
        raise NotImplementedError("GenerateExamplesByBeam reads the files itself")

    def GenerateExamplesByBeam(
        self, pipeline: beam.Pipeline, exec_properties: Dict[str, Any]
    ) -> Dict[str, beam.PCollection]:
        feature = read_options(exec_properties)["feature"]
        folder = exec_properties[standard_component_specs.INPUT_BASE_KEY]
        files = list_inputs(folder, feature)  # fails before Beam starts on an empty folder
        return {
            SPLIT: (
                pipeline
                | "Files" >> beam.Create(files)
                | "Spread" >> beam.Reshuffle()
                | "Read" >> beam.FlatMap(read_inputs, feature)
                | "ToExample"
                >> beam.MapTuple(lambda input_id, value: make_example(feature, input_id, value))
            )
        }
