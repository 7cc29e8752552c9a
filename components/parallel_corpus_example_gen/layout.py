"""Finds which parallel-corpus layout a data directory holds, when the ExampleGen runs."""

import dataclasses
import os
import re
from typing import Dict, List

from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2

from components import file_io
from components.data_error import DataError
from components.seeded_split import SPLIT_NAMES, hash_split_config

PARALLEL = "parallel"
TSV = "tsv"
TSV_SUFFIXES = (".tsv", ".txt")
IGNORED_PREFIXES = ("_", ".", "README")  # e.g. the `_about.txt` beside Anki's `spa.txt`


class CorpusDataError(DataError):
    """Corpus files that cannot be read as they are (components/data_error.py)."""


@dataclasses.dataclass(frozen=True)
class CorpusLayout:
    root: str  # the ExampleGen's input_base
    format: str  # PARALLEL or TSV
    input_config: example_gen_pb2.Input
    output_config: example_gen_pb2.Output


def parallel_file(root: str, prefix: str, language: str) -> str:
    """`root/prefix.language`, or its `.gz` twin when only that exists."""
    plain = os.path.join(root, f"{prefix}.{language}")
    return plain if fileio.exists(plain) or not fileio.exists(plain + ".gz") else plain + ".gz"


def _layout(root: str, format: str, patterns: Dict[str, str], eval_percent: int) -> CorpusLayout:
    """Known split names keep their split (train + eval needed); anything else is hash-split."""
    named = {SPLIT_NAMES.get(prefix): pattern for prefix, pattern in patterns.items()}
    if "train" in named and "eval" in named:
        splits = [
            example_gen_pb2.Input.Split(name=name, pattern=named[name])
            for name in ("train", "eval", "test")
            if name in named
        ]
        return CorpusLayout(
            root, format, example_gen_pb2.Input(splits=splits), example_gen_pb2.Output()
        )
    if len(patterns) > 1:
        raise CorpusDataError(
            f"{root}: several corpora ({sorted(patterns)}) but not both a 'train' and a "
            f"'val'/'valid'/'dev' one; name them so, or keep one to be split {100 - eval_percent}/"
            f"{eval_percent}"
        )
    (pattern,) = patterns.values()
    return CorpusLayout(
        root,
        format,
        example_gen_pb2.Input(splits=[example_gen_pb2.Input.Split(name="train", pattern=pattern)]),
        hash_split_config(eval_percent),
    )


def detect_layout(
    data_dir: str, source_lang: str, target_lang: str, eval_percent: int
) -> CorpusLayout:
    """The layout under `data_dir`.

    - Parallel files: `<prefix>.<source_lang>` and `<prefix>.<target_lang>` (optionally `.gz`),
      line N of one pairs with line N of the other (Multi30k: `train.de`, `train.en`, `val.de`...).
    - Tab-separated: `*.tsv` / `*.txt` files of `source<TAB>target[<TAB>anything]` lines
      (the Anki `spa.txt` files).
    `train` + `val`/`valid`/`dev` keep their split (`test` too); a single corpus gets a seeded
    hash split.
    """
    if source_lang == target_lang:
        raise ValueError(f"source and target language are both {source_lang!r}")
    if not fileio.isdir(data_dir):
        raise FileNotFoundError(f"parallel corpus directory not found: {data_dir}")
    names = sorted(os.path.basename(p.rstrip("/")) for p in file_io.listdir(data_dir))
    suffix = re.compile(
        rf"^(?P<prefix>.+)\.(?P<lang>{re.escape(source_lang)}|"
        rf"{re.escape(target_lang)})(\.gz)?$"
    )
    sides: Dict[str, set] = {}
    for name in names:
        match = suffix.match(name)
        if match:
            sides.setdefault(match["prefix"], set()).add(match["lang"])
    if sides:
        for prefix, langs in sorted(sides.items()):
            for missing in {source_lang, target_lang} - langs:
                raise FileNotFoundError(
                    f"{parallel_file(data_dir, prefix, missing)}: missing; it pairs with "
                    f"{parallel_file(data_dir, prefix, (langs - {missing}).pop())}"
                )
        return _layout(data_dir, PARALLEL, {p: f"{p}.*" for p in sides}, eval_percent)
    tsv: List[str] = [
        n
        for n in names
        if n.endswith(TSV_SUFFIXES)
        and not n.startswith(IGNORED_PREFIXES)
        and not fileio.isdir(os.path.join(data_dir, n))
    ]
    if tsv:
        return _layout(data_dir, TSV, {os.path.splitext(n)[0]: n for n in tsv}, eval_percent)
    raise CorpusDataError(
        f"{data_dir}: no parallel corpus found. Expected '<split>.{source_lang}' and "
        f"'<split>.{target_lang}' files (plain or .gz), or .tsv/.txt files of "
        "'source<TAB>target' lines."
    )
