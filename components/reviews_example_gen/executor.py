"""Reads labelled texts into tf.Examples: `text`, `label` (the class's index), `label_name`,
`rating` and `id`; and when a run pretrains, the layout's texts without labels into the
`unlabeled` split (label NO_LABEL). The classes and their order are classes.py's.

Bad input stops the run with an error that names the file: a missing or unknown label folder,
an IMDB file name that is not ID_RATING.txt, a rating outside 1-10 or on the wrong side of its
folder, an empty text, bytes that are not UTF-8 (no silent repair: a wrongly decoded review
is a silently wrong training example), a CSV row without text or with a label that is not one
of the classes.
"""

import csv
import dataclasses
import io
import os
import re
from typing import Any, Dict, Iterator, List, Sequence

import apache_beam as beam
import tensorflow as tf
from absl import logging
from tfx.dsl.io import fileio
from tfx.types import standard_component_specs

from components import file_io
from components.dataset_example_gen import LayoutExecutor, read_options, read_split_configs
from components.reviews_example_gen.classes import (
    BINARY,
    detect_classes,
    format_classes,
    label_folders,
    label_index,
    lookup_label,
    parse_classes,
)
from components.reviews_example_gen.layout import ACLIMDB, ReviewDataError, detect_layout
from components.seeded_split import split_by_seeded_hash
from components.text_profile import text_profile
from components.unlabeled_example_gen.executor import (
    UnlabeledDataError,
    list_inputs,
    read_inputs,
)
from trainer_module import features

IMDB_FOLDERS = ("neg", "pos")  # aclImdb's folders of BINARY's classes
FILE_NAME = re.compile(r"^(?P<id>\d+)_(?P<rating>\d+)\.txt$")
UNKNOWN_RATING = -1


def decode_text(path: str, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ReviewDataError(
            f"{path}: not valid UTF-8 at byte {error.start} "
            f"({data[error.start : error.start + 4]!r}); "
            "re-encode the file as UTF-8"
        ) from None
    return text.lstrip("\ufeff")


def make_example(
    text: str, label: int, label_name: str, rating: int, review_id: str
) -> tf.train.Example:
    feature = tf.train.Feature
    return tf.train.Example(
        features=tf.train.Features(
            feature={
                features.TEXT: feature(bytes_list=tf.train.BytesList(value=[text.encode("utf-8")])),
                features.LABEL: feature(int64_list=tf.train.Int64List(value=[label])),
                features.LABEL_NAME: feature(
                    bytes_list=tf.train.BytesList(value=[label_name.encode("utf-8")])
                ),
                features.RATING: feature(int64_list=tf.train.Int64List(value=[rating])),
                features.REVIEW_ID: feature(
                    bytes_list=tf.train.BytesList(value=[review_id.encode("utf-8")])
                ),
                **text_profile(text, *features.PROFILES[features.TEXT]),
            }
        )
    )


def list_aclimdb_files(root: str, split_pattern: str, classes: Sequence[str] = BINARY) -> List[str]:
    """The text files of one split folder (`train/*/*.txt` -> `root/train`), checked: a
    folder per class, each holding .txt files."""
    split_dir = os.path.join(root, split_pattern.split("/")[0])
    if not fileio.isdir(split_dir):
        raise FileNotFoundError(f"review split folder not found: {split_dir}")
    index, files, folders = label_index(classes), [], label_folders(split_dir)
    for folder in folders:
        path = os.path.join(split_dir, folder)
        if lookup_label(index, folder) is None:
            raise ReviewDataError(
                f"{path}: unknown label folder '{folder}'; the classes are {list(classes)}"
            )
        found = sorted(file_io.glob(os.path.join(path, "*.txt")))
        if not found:
            raise ReviewDataError(f"{path}: label folder has no .txt reviews")
        files.extend(found)
    present = {lookup_label(index, folder) for folder in folders}
    names = IMDB_FOLDERS if tuple(classes) == BINARY else classes
    missing = [name for i, name in enumerate(names) if i not in present]
    if missing:
        raise ReviewDataError(f"{split_dir}: missing label folder(s) {missing}")
    return files


def read_aclimdb_review(path: str, root: str, classes: Sequence[str] = BINARY) -> tf.train.Example:
    """One text file of the folder layout. IMDB's (classes BINARY) are named ID_RATING.txt,
    their rating on the side of their folder; others may be named anything (a name of that
    form still gives the rating)."""
    folder = os.path.basename(os.path.dirname(path))
    label = lookup_label(label_index(classes), folder)
    assert label is not None  # list_aclimdb_files checked the folders
    match = FILE_NAME.match(os.path.basename(path))
    binary = tuple(classes) == BINARY
    if binary and not match:
        raise ReviewDataError(f"{path}: file name is not ID_RATING.txt (for example 123_8.txt)")
    rating = int(match["rating"]) if match else UNKNOWN_RATING
    if match and not 1 <= rating <= 10:
        raise ReviewDataError(f"{path}: rating {rating} is outside 1-10")
    if binary and (rating > 5) != bool(label):
        raise ReviewDataError(f"{path}: rating {rating} contradicts its folder '{folder}'")
    text = decode_text(path, file_io.read_bytes(path))
    if not text.strip():
        raise ReviewDataError(f"{path}: empty review")
    review_id = os.path.relpath(path, root)[: -len(".txt")]  # e.g. train/pos/123_8
    return make_example(text, label, classes[label], rating, review_id)


def read_csv_reviews(path: str, classes: Sequence[str] = BINARY) -> Iterator[tf.train.Example]:
    """Rows of a `text,label[,rating][,id]` CSV file (quoted fields may span lines)."""
    index = label_index(classes)
    with fileio.open(path, "rb") as f:
        content = decode_text(path, f.read())
    reader = csv.DictReader(io.StringIO(content, newline=""))
    try:
        fieldnames = reader.fieldnames
    except csv.Error as error:
        raise ReviewDataError(f"{path}:1: not readable as CSV ({error})") from None
    if fieldnames is None or not {"text", "label"} <= set(fieldnames):
        raise ReviewDataError(
            f"{path}: CSV header must name 'text' and 'label' columns, found {reader.fieldnames}"
        )
    rows = 0
    for row in _csv_rows(reader, path):
        where = f"{path}:{reader.line_num}"
        text, label = row["text"] or "", lookup_label(index, row["label"] or "")
        if not text.strip():
            raise ReviewDataError(f"{where}: empty review")
        if label is None:
            raise ReviewDataError(
                f"{where}: unknown label {row['label']!r}; the classes are {list(classes)}"
                + ("" if (row["label"] or "").strip() else " (the label is empty)")
            )
        rating = (row.get("rating") or "").strip()
        if rating and not rating.lstrip("-").isdigit():
            raise ReviewDataError(f"{where}: rating {rating!r} is not an integer")
        review_id = (row.get("id") or "").strip() or f"{os.path.basename(path)}:{reader.line_num}"
        rows += 1
        yield make_example(
            text, label, classes[label], int(rating) if rating else UNKNOWN_RATING, review_id
        )
    if not rows:
        raise ReviewDataError(f"{path}: CSV file has no reviews")


def _csv_rows(reader: csv.DictReader, path: str) -> Iterator[dict]:
    """The reader's rows; what the csv module cannot parse stops the run naming the line."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as error:  # a field over the csv module's limit, a stray quote
            raise ReviewDataError(
                f"{path}:{reader.line_num}: not readable as CSV ({error})"
            ) from None


def list_unlabeled_files(root: str, folder: str) -> List[str]:
    """The files of texts in `root/folder` (none when it is absent: pretraining then reads the
    training split alone)."""
    path = os.path.join(root, folder)
    if not fileio.isdir(path):
        logging.info("No unlabelled texts at %s: pretraining reads the training split", path)
        return []
    return list_inputs(path, features.TEXT)


def read_unlabeled(path: str, root: str) -> Iterator[tf.train.Example]:
    """The texts of one file (a text per *.txt file, one {"text": ...} per *.jsonl line), with
    the label NO_LABEL and an id of their path under the layout's root."""
    folder = os.path.relpath(os.path.dirname(path), root)
    try:
        for input_id, value in read_inputs(path, features.TEXT):
            text = decode_text(path, value)
            if not text.strip():
                raise ReviewDataError(f"{path}: {input_id}: empty text")
            review_id = f"{folder}/{input_id}"
            yield make_example(text, features.NO_LABEL, "", UNKNOWN_RATING, review_id)
    except UnlabeledDataError as error:
        raise ReviewDataError(str(error)) from None


def list_csv_files(pattern: str) -> List[str]:
    files = sorted(file_io.glob(pattern))
    if not files:
        raise FileNotFoundError(f"no CSV files match {pattern}")
    return files


@beam.ptransform_fn
@beam.typehints.with_input_types(beam.Pipeline)
@beam.typehints.with_output_types(tf.train.Example)
def _ReviewsToExample(
    pipeline: beam.Pipeline, exec_properties: Dict[str, Any], split_pattern: str
) -> beam.pvalue.PCollection:
    # Only the pattern enters the Beam graph: the workers list, read and check the files.
    root = exec_properties[standard_component_specs.INPUT_BASE_KEY]
    options = read_options(exec_properties)
    classes = parse_classes(options["classes"])
    pattern = pipeline | "Pattern" >> beam.Create([split_pattern])
    if options["format"] == ACLIMDB:
        return (
            pattern
            | "ListFiles" >> beam.FlatMap(lambda p: list_aclimdb_files(root, p, classes))
            | "Spread" >> beam.Reshuffle()
            | "ReadReviews" >> beam.Map(read_aclimdb_review, root=root, classes=classes)
        )
    return (
        pattern
        | "ListFiles" >> beam.FlatMap(lambda p: list_csv_files(os.path.join(root, p)))
        | "Spread" >> beam.Reshuffle()
        | "ReadRows" >> beam.FlatMap(read_csv_reviews, classes=classes)
    )


class Executor(LayoutExecutor):
    """Reviews -> tf.Examples, with a seeded hash split when the data has no split of its own."""

    def detect_layout(self, data_dir: str, options: dict):
        """The layout, with its classes: as the pipeline was built with them, else read from
        this span (classes.detect_classes)."""
        layout = detect_layout(
            data_dir, int(options["eval_percent"]), bool(options.get("unlabeled", False))
        )
        classes = parse_classes(options.get("classes", "")) or detect_classes(data_dir)
        return dataclasses.replace(layout, classes=classes)

    def layout_options(self, layout) -> dict:
        return {
            "format": layout.format,
            "unlabeled_folder": layout.unlabeled,
            "classes": format_classes(layout.classes),
        }

    def GetInputSourceToExamplePTransform(self):  # a beam.ptransform_fn
        return _ReviewsToExample

    def read_splits(
        self, pipeline, exec_properties: Dict[str, Any]
    ) -> Dict[str, beam.pvalue.PCollection]:
        input_config, output_config = read_split_configs(exec_properties)
        options = read_options(exec_properties)
        if output_config.split_config.splits:
            examples = pipeline | "InputToRecord" >> _ReviewsToExample(
                exec_properties, input_config.splits[0].pattern
            )
            splits = split_by_seeded_hash(
                examples, input_config, output_config, int(options["split_seed"])
            )
        else:
            splits = {
                split.name: pipeline
                | f"InputToRecord[{split.name}]"
                >> _ReviewsToExample(exec_properties, split.pattern)
                for split in input_config.splits
                if split.name != features.UNLABELED_SPLIT
            }
        if options.get("unlabeled_folder"):
            root = exec_properties[standard_component_specs.INPUT_BASE_KEY]
            splits[features.UNLABELED_SPLIT] = (
                pipeline
                | "UnlabeledFolder" >> beam.Create([options["unlabeled_folder"]])
                | "ListUnlabeled" >> beam.FlatMap(lambda folder: list_unlabeled_files(root, folder))
                | "SpreadUnlabeled" >> beam.Reshuffle()
                | "ReadUnlabeled" >> beam.FlatMap(read_unlabeled, root=root)
            )
        return splits
