"""Finds which review layout a data directory holds, when the ExampleGen runs."""

import dataclasses
import os

from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2

from components import file_io
from components.data_error import DataError
from components.seeded_split import hash_split_config

ACLIMDB = "aclimdb"
CSV = "csv"


class ReviewDataError(DataError):
    """Review data that cannot be read as it is (components/data_error.py)."""


@dataclasses.dataclass(frozen=True)
class ReviewsLayout:
    root: str  # the ExampleGen's input_base
    format: str  # ACLIMDB or CSV
    input_config: example_gen_pb2.Input
    output_config: example_gen_pb2.Output


def _splits(**patterns: str) -> example_gen_pb2.Input:
    return example_gen_pb2.Input(
        splits=[
            example_gen_pb2.Input.Split(name=name, pattern=pattern)
            for name, pattern in patterns.items()
        ]
    )


def detect_layout(data_dir: str, eval_percent: int = 20) -> ReviewsLayout:
    """The layout under `data_dir`.

    - aclImdb: `[aclImdb/]train/{pos,neg}/ID_RATING.txt` and optionally `test/...`; the
      original train/test split is kept (test becomes `eval`), else a seeded hash split.
    - CSV with a `text,label` header: `train.csv` and `test.csv` keep their split; any other
      `*.csv` files are split by seeded hash.
    """
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
