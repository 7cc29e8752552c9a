"""Reads parallel corpora into tf.Examples: `source`, `target` and `id` (`<file prefix>:<line>`).

Bad input stops the run with an error that names the file: parallel files with different line
counts (both files and counts), bytes that are not UTF-8 (file, line and byte offset; no silent
repair), a TSV line without a tab. Lines where either side is empty are skipped and counted;
the count is recorded on the Examples artifact (`skipped_empty_pairs`) and in the run summary.
"""
import gzip
import os
from typing import Any, Dict, Iterator, List, Tuple

import apache_beam as beam
import tensorflow as tf
from absl import logging
from tfx.components.example_gen.base_example_gen_executor import BaseExampleGenExecutor
from tfx.dsl.io import fileio
from tfx.types import artifact_utils, standard_component_specs

from components.parallel_corpus_example_gen.layout import (PARALLEL, CorpusDataError,
                                                           parallel_file)
from components.example_gen_options import read_options, read_split_configs
from components.seeded_split import split_by_seeded_hash
from trainer_module import features

SKIPPED_PROPERTY = "skipped_empty_pairs"  # on the output Examples artifact
PAIRS_PROPERTY = "pairs"


def read_lines(path: str) -> List[str]:
    """The lines of a UTF-8 text file (gzip if it ends in .gz), without line endings."""
    if not fileio.exists(path):
        raise FileNotFoundError(f"corpus file not found: {path}")
    with fileio.open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise CorpusDataError(f"{path}: not a readable gzip file ({error})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise CorpusDataError(
            f"{path}: not valid UTF-8 at line {line}, byte {error.start} "
            f"({data[error.start:error.start + 4]!r}); re-encode the file as UTF-8") from None
    lines = text.lstrip("\ufeff").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline ends the last line rather than starting a new one
    return [line.rstrip("\r") for line in lines]


def make_example(source: str, target: str, pair_id: str) -> tf.train.Example:
    def text(value: str) -> tf.train.Feature:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode("utf-8")]))

    return tf.train.Example(features=tf.train.Features(feature={
        features.SOURCE: text(source), features.TARGET: text(target),
        features.PAIR_ID: text(pair_id)}))


def read_parallel(root: str, prefix: str, source_lang: str,
                  target_lang: str) -> Iterator[Tuple[str, str, str]]:
    source_path = parallel_file(root, prefix, source_lang)
    target_path = parallel_file(root, prefix, target_lang)
    sources, targets = read_lines(source_path), read_lines(target_path)
    if len(sources) != len(targets):
        raise CorpusDataError(
            f"parallel files differ in length: {source_path} has {len(sources)} lines, "
            f"{target_path} has {len(targets)}")
    for number, (source, target) in enumerate(zip(sources, targets), start=1):
        yield source, target, f"{prefix}:{number}"


def read_tsv(path: str) -> Iterator[Tuple[str, str, str]]:
    name = os.path.splitext(os.path.basename(path))[0]
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            yield "", "", f"{name}:{number}"  # an empty line: skipped and counted
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise CorpusDataError(f"{path}:{number}: no tab; expected 'source<TAB>target', "
                                  f"got {line[:60]!r}")
        yield fields[0], fields[1], f"{name}:{number}"


def read_pairs(root: str, pattern: str, options: dict) -> Tuple[List[tf.train.Example], int]:
    """(examples, number of pairs skipped because a side is empty) for one split pattern."""
    if options["format"] == PARALLEL:
        prefix = pattern[: -len(".*")]
        rows = read_parallel(root, prefix, options["source_lang"], options["target_lang"])
    else:
        rows = read_tsv(os.path.join(root, pattern))
    examples, skipped = [], 0
    for source, target, pair_id in rows:
        source, target = source.strip(), target.strip()
        if not source or not target:
            skipped += 1
            continue
        examples.append(make_example(source, target, pair_id))
    if not examples:
        raise CorpusDataError(f"{os.path.join(root, pattern)}: no sentence pairs")
    return examples, skipped


class Executor(BaseExampleGenExecutor):
    """Sentence pairs -> tf.Examples, with a seeded hash split when the corpus has no split."""

    def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
        raise NotImplementedError("GenerateExamplesByBeam reads the corpus itself")

    def Do(self, input_dict, output_dict, exec_properties) -> None:
        self._skipped, self._pairs = 0, 0
        super().Do(input_dict, output_dict, exec_properties)
        examples = artifact_utils.get_single_instance(
            output_dict[standard_component_specs.EXAMPLES_KEY])
        examples.set_int_custom_property(SKIPPED_PROPERTY, self._skipped)
        examples.set_int_custom_property(PAIRS_PROPERTY, self._pairs)
        if self._skipped:
            logging.warning("Skipped %d sentence pairs with an empty side", self._skipped)

    def GenerateExamplesByBeam(self, pipeline: beam.Pipeline,
                               exec_properties: Dict[str, Any]) -> Dict[str, beam.pvalue.PCollection]:
        input_config, output_config = read_split_configs(exec_properties)
        options = read_options(exec_properties)
        root = exec_properties[standard_component_specs.INPUT_BASE_KEY]
        splits = {}
        for split in input_config.splits:
            examples, skipped = read_pairs(root, split.pattern, options)
            self._skipped += skipped
            self._pairs += len(examples)
            logging.info("Read %d pairs for %s (%d skipped)", len(examples), split.pattern, skipped)
            splits[split.name] = pipeline | f"Create{split.name}" >> beam.Create(examples)
        if not output_config.split_config.splits:
            return splits
        return split_by_seeded_hash(splits["train"], input_config, output_config,
                                    int(options["split_seed"]))
