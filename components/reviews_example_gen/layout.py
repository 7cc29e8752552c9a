"""Finds which review layout a data directory holds, when the ExampleGen runs."""

import dataclasses
import os
from typing import Tuple

from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2

from components import file_io
from components.data_error import DataError
from components.seeded_split import hash_split_config
from trainer_module.features import UNLABELED_SPLIT

ACLIMDB = "aclimdb"
CSV = "csv"
# Where each layout keeps texts without labels, under its root: aclImdb's own folder of 50,000
# unlabelled reviews, and for CSV files a folder of *.txt (a text per file) or *.jsonl
# ({"text": ...} per line) files.
UNLABELED_FOLDERS = {ACLIMDB: "train/unsup", CSV: "unlabeled"}


class ReviewDataError(DataError):
    """Review data that cannot be read as it is (components/data_error.py)."""


@dataclasses.dataclass(frozen=True)
class ReviewsLayout:
    root: str  # the ExampleGen's input_base
    format: str  # ACLIMDB or CSV
    input_config: example_gen_pb2.Input
    output_config: example_gen_pb2.Output
    unlabeled: str = ""  # with_unlabeled: the folder of texts without labels, under root
    classes: Tuple[str, ...] = ()  # by label (classes.py), once the executor knows them


def with_unlabeled(layout: ReviewsLayout) -> ReviewsLayout:
    """`layout` with a third split, UNLABELED_SPLIT, of the texts in its UNLABELED_FOLDERS
    folder (none, an empty split, when the folder is absent): for pretraining, which reads
    them through Transform like the training split. TFX names an ExampleGen's splits from its
    configs, so the split is declared there: as an input split beside the layout's own, or
    beside a hash split as an output split whose bucket is never drawn (split_by_seeded_hash
    skips it)."""
    folder = UNLABELED_FOLDERS[layout.format]
    input_config, output_config = example_gen_pb2.Input(), example_gen_pb2.Output()
    input_config.CopyFrom(layout.input_config)
    output_config.CopyFrom(layout.output_config)
    if output_config.split_config.splits:
        output_config.split_config.splits.add(name=UNLABELED_SPLIT, hash_buckets=1)
    else:
        input_config.splits.add(name=UNLABELED_SPLIT, pattern=f"{folder}/*")
    return dataclasses.replace(
        layout, input_config=input_config, output_config=output_config, unlabeled=folder
    )


def _splits(**patterns: str) -> example_gen_pb2.Input:
    return example_gen_pb2.Input(
        splits=[
            example_gen_pb2.Input.Split(name=name, pattern=pattern)
            for name, pattern in patterns.items()
        ]
    )


def detect_layout(data_dir: str, eval_percent: int, unlabeled: bool = False) -> ReviewsLayout:
    """The layout under `data_dir` (`unlabeled`: with_unlabeled's).

    - aclImdb: `[aclImdb/]train/{pos,neg}/ID_RATING.txt` and optionally `test/...`; the
      original train/test split is kept (test becomes `eval`), else a seeded hash split.
    - CSV with a `text,label` header: `train.csv` and `test.csv` keep their split; any other
      `*.csv` files are split by seeded hash.
    - Texts without labels (UNLABELED_FOLDERS): `train/unsup/*.txt` in aclImdb, an
      `unlabeled/` folder beside CSV files.
    """
    layout = _labeled_layout(data_dir, eval_percent)
    return with_unlabeled(layout) if unlabeled else layout


def _labeled_layout(data_dir: str, eval_percent: int) -> ReviewsLayout:
    if not fileio.isdir(data_dir):
        raise FileNotFoundError(f"review data directory not found: {data_dir}")
    root = data_dir
    if fileio.isdir(os.path.join(data_dir, "aclImdb")):
        root = os.path.join(data_dir, "aclImdb")
    if fileio.isdir(os.path.join(root, "train")):
        if fileio.isdir(os.path.join(root, "test")):
            return ReviewsLayout(
                root,
                ACLIMDB,
                _splits(train="train/*/*.txt", eval="test/*/*.txt"),
                example_gen_pb2.Output(),
            )
        return ReviewsLayout(
            root, ACLIMDB, _splits(train="train/*/*.txt"), hash_split_config(eval_percent)
        )
    csv_files = sorted(os.path.basename(f) for f in file_io.glob(os.path.join(data_dir, "*.csv")))
    if {"train.csv", "test.csv"} <= set(csv_files):
        return ReviewsLayout(
            data_dir, CSV, _splits(train="train.csv", eval="test.csv"), example_gen_pb2.Output()
        )
    if csv_files:
        return ReviewsLayout(data_dir, CSV, _splits(train="*.csv"), hash_split_config(eval_percent))
    raise ReviewDataError(
        f"{data_dir}: no reviews found. Expected the aclImdb layout "
        "(train/pos/ID_RATING.txt, train/neg/..., optional test/...) or CSV files with a "
        "'text,label' header."
    )
