"""The classes of a labelled text data set, in a stable order, and each raw label's index.

Where the labels come from: the label folders of the folder layout (`train/<class>/*.txt`,
aclImdb's `pos`/`neg` among them), or the `label` column of CSV files. Their order, which is
the model's output order and the export's label names:

- IMDB's binary labels (only `neg`/`pos`, `0`/`1`, `negative`/`positive`, any case, even
  where the data holds one of them): the classes `negative`, `positive`, so that IMDB's
  recipe, metrics, exports and drift gate stay as they are;
- integers (a 1-5 star rating, a queue number): in numeric order, named as written (`1`, `2`);
- any other strings: in sorted order, named as written (`billing`, `login`, `shipping`).

The pipeline reads them when it is built (`detect_classes`), so that its EvalConfig, the
model's head and Transform's n-gram path fit the data's number of classes; the ExampleGen is
given that list and refuses a row whose label is not in it, naming the file and line.
"""

import csv
import io
import os
import re
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from tfx.dsl.io import fileio

from components import file_io
from components.reviews_example_gen.layout import ACLIMDB, ReviewDataError, detect_layout
from components.seeded_split import EVAL_PERCENT
from trainer_module.features import LABEL_NAMES

BINARY = LABEL_NAMES  # IMDB's two classes
BINARY_ALIASES = {"0": 0, "1": 1, "neg": 0, "pos": 1, "negative": 0, "positive": 1}
SKIPPED_FOLDERS = {"unsup"}  # aclImdb's unlabelled reviews
SEPARATOR = ","  # between class names in the `classes` data option
INTEGER = re.compile(r"^[+-]?\d+$")


def order_classes(raw: Iterable[str], where: str) -> Tuple[str, ...]:
    """The class names of the distinct raw labels `raw`, in label order (module docstring);
    raises ReviewDataError, naming `where`, when there are fewer than two."""
    labels = {label.strip() for label in raw}
    if labels and {label.lower() for label in labels} <= set(BINARY_ALIASES):
        # IMDB's labels, however spelt: its two classes, even where this data holds one
        # (a span of positive reviews only is for the drift gate to stop, with its reason).
        return BINARY
    if len(labels) < 2:
        raise ReviewDataError(
            f"{where}: {len(labels)} distinct label(s) {sorted(labels)}; a classifier needs "
            "two or more classes"
        )
    if all(INTEGER.match(label) for label in labels):
        return tuple(str(n) for n in sorted({int(label) for label in labels}))
    return tuple(sorted(labels))


def label_index(classes: Sequence[str]) -> Dict[str, int]:
    """Raw label -> index for `classes` (order_classes' names): the names themselves, integers
    as any spelling of their value, and for BINARY its aliases in any case (lookup_label)."""
    index = {name: i for i, name in enumerate(classes)}
    if tuple(classes) == BINARY:
        index.update(BINARY_ALIASES)
    return index


def lookup_label(index: Dict[str, int], raw: str) -> Optional[int]:
    """The index of raw label `raw` (stripped; integers by value; BINARY's aliases in any
    case), or None when it is not a class."""
    label = raw.strip()
    if label in index:
        return index[label]
    if INTEGER.match(label):
        return index.get(str(int(label)))
    return index.get(label.lower()) if label.lower() in BINARY_ALIASES else None


def parse_classes(text: str) -> Tuple[str, ...]:
    """The `classes` data option ("billing,login,shipping") -> its names; empty: none given."""
    names = tuple(name.strip() for name in text.split(SEPARATOR) if name.strip())
    if names and len(set(names)) != len(names):
        raise ValueError(f"classes {text!r} names a class twice")
    if len(names) == 1:
        raise ValueError(f"classes {text!r} names one class; a classifier needs two or more")
    return names


def format_classes(classes: Sequence[str]) -> str:
    for name in classes:
        if SEPARATOR in name:
            raise ReviewDataError(
                f"class name {name!r} holds a {SEPARATOR!r}; rename the label (the pipeline "
                "passes its classes as a comma-separated list)"
            )
    return SEPARATOR.join(classes)


def label_folders(split_dir: str) -> List[str]:
    """The label folders of one split folder of the folder layout (aclImdb's `unsup` left
    out; files beside them, such as aclImdb's urls_*.txt, are not folders)."""
    return [
        name
        for name in (entry.rstrip("/") for entry in sorted(file_io.listdir(split_dir)))
        if name not in SKIPPED_FOLDERS and fileio.isdir(os.path.join(split_dir, name))
    ]


def csv_labels(path: str) -> Iterator[str]:
    """The `label` column of one CSV file (read_csv_reviews checks the rest as it reads)."""
    with fileio.open(path, "rb") as f:
        content = f.read().decode("utf-8", errors="replace").lstrip("\ufeff")
    reader = csv.DictReader(io.StringIO(content, newline=""))
    try:
        if reader.fieldnames is None or "label" not in reader.fieldnames:
            raise ReviewDataError(
                f"{path}: CSV header must name 'text' and 'label' columns, found "
                f"{reader.fieldnames}"
            )
        for row in reader:
            if (row.get("label") or "").strip():
                yield row["label"]
    except csv.Error as error:
        raise ReviewDataError(f"{path}:{reader.line_num}: not readable as CSV ({error})") from None


def detect_classes(data_dir: str) -> Tuple[str, ...]:
    """The classes of the labelled texts under `data_dir` (a folder the reviews ExampleGen
    reads; with a `{SPAN}`, its newest span), in label order: the training split's label
    folders, or the labels of every CSV file the layout reads."""
    data_dir = newest_span(data_dir)
    layout = detect_layout(data_dir, EVAL_PERCENT)  # (the share does not change the classes)
    if layout.format == ACLIMDB:
        split_dir = os.path.join(layout.root, "train")
        return order_classes(label_folders(split_dir), split_dir)
    files = sorted(
        {
            path
            for split in layout.input_config.splits
            for path in file_io.glob(os.path.join(layout.root, split.pattern))
        }
    )
    return order_classes({label for path in files for label in csv_labels(path)}, ", ".join(files))


def newest_span(data_dir: str) -> str:
    """`data_dir`, or with a `{SPAN}` (and `{VERSION}`) its newest span's folder, as TFX's
    driver would pick it (the highest numbers)."""
    if "{SPAN}" not in data_dir:
        return data_dir
    pattern = re.escape(data_dir).replace(r"\{SPAN\}", r"(\d+)").replace(r"\{VERSION\}", r"(\d+)")
    found = []
    for path in file_io.glob(data_dir.replace("{SPAN}", "*").replace("{VERSION}", "*")):
        match = re.fullmatch(pattern, path.rstrip("/"))
        if match:
            found.append((tuple(int(n) for n in match.groups()), path.rstrip("/")))
    if not found:
        raise FileNotFoundError(f"no span folders match {data_dir}")
    return max(found)[1]
