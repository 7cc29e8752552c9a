"""Reads parallel corpora into tf.Examples: `source`, `target` and `id` (`<file prefix>:<line>`).

Bad input stops the run with an error that names the file: parallel files with different line
counts (both files and counts), bytes that are not UTF-8 (file, line and byte offset; no silent
repair), a TSV line without a tab. Lines where either side is empty are skipped and counted;
the count is recorded on the Examples artifact (`skipped_empty_pairs`) and in the run summary.
"""

import gzip
import itertools
import json
import os
import re
from typing import Any, Dict, Iterator, Tuple

import apache_beam as beam
import tensorflow as tf
from absl import logging
from tfx.dsl.io import fileio
from tfx.types import artifact_utils, standard_component_specs

from components import file_io
from components.dataset_example_gen import LayoutExecutor, read_options, read_split_configs
from components.parallel_corpus_example_gen.layout import (
    PARALLEL,
    CorpusDataError,
    detect_layout,
    parallel_file,
)
from components.seeded_split import split_by_seeded_hash
from components.text_profile import text_profile
from trainer_module import features

SKIPPED_PROPERTY = "skipped_empty_pairs"  # on the output Examples artifact
PAIRS_PROPERTY = "pairs"
COUNTS_FILE = "pair_counts.json"  # written by the pipeline, read and removed by Do()


# A line and its ending, as Python's universal newlines split text: "\n", "\r\n" or a lone "\r"
# (one not at the end of what was read so far: the next read may bring its "\n").
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r(?!\Z)|\n)")
CHUNK_BYTES = 1 << 20


def split_lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The lines of a byte stream given in chunks, each with its ending (the last may have
    none). Not the stream's own line iteration: tf.io.gfile's drops every "\r" ("b\rc\n" reads
    as "bc") and reads nothing of a file that is just "\r"; Python's binary files split at "\n"
    only."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        end = 0
        for match in _LINE.finditer(pending):
            yield match.group()
            end = match.end()
        pending = pending[end:]
    if pending:
        yield pending


def read_lines(path: str) -> Iterator[str]:
    """The lines of a UTF-8 text file (gzip if it ends in .gz), without line endings, read one
    at a time; lines end as in Python's text files ("\n", "\r\n" or "\r")."""
    if not fileio.exists(path):
        raise FileNotFoundError(f"corpus file not found: {path}")
    with fileio.open(path, "rb") as raw:
        stream = gzip.GzipFile(fileobj=raw) if path.endswith(".gz") else raw
        chunks = iter(lambda: stream.read(CHUNK_BYTES), b"")
        offset, number = 0, 0
        try:
            for number, data in enumerate(split_lines(chunks), start=1):
                try:
                    line = data.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise CorpusDataError(
                        f"{path}: not valid UTF-8 at line {number}, byte {offset + error.start} "
                        f"({data[error.start : error.start + 4]!r}); re-encode the file as "
                        "UTF-8"
                    ) from None
                offset += len(data)
                if number == 1:
                    line = line.lstrip("\ufeff")
                yield line.removesuffix("\n").removesuffix("\r")
        except (OSError, EOFError) as error:  # gzip: a corrupt or truncated stream
            raise CorpusDataError(f"{path}: not a readable gzip file ({error})") from None


def make_example(source: str, target: str, pair_id: str) -> tf.train.Example:
    def text(value: str) -> tf.train.Feature:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode("utf-8")]))

    return tf.train.Example(
        features=tf.train.Features(
            feature={
                features.SOURCE: text(source),
                features.TARGET: text(target),
                features.PAIR_ID: text(pair_id),
                **text_profile(source, *features.PROFILES[features.SOURCE]),
            }
        )
    )


def read_parallel(
    root: str, prefix: str, source_lang: str, target_lang: str
) -> Iterator[Tuple[str, str, str]]:
    source_path = parallel_file(root, prefix, source_lang)
    target_path = parallel_file(root, prefix, target_lang)
    sources, targets = read_lines(source_path), read_lines(target_path)
    for number, (source, target) in enumerate(itertools.zip_longest(sources, targets), start=1):
        if source is None or target is None:  # one file ended first: count both
            counts = {
                path: number - 1 + (line is not None) + sum(1 for _ in rest)
                for path, line, rest in (
                    (source_path, source, sources),
                    (target_path, target, targets),
                )
            }
            raise CorpusDataError(
                f"parallel files differ in length: {source_path} has {counts[source_path]} "
                f"lines, {target_path} has {counts[target_path]}"
            )
        yield source, target, f"{prefix}:{number}"


def read_tsv(path: str) -> Iterator[Tuple[str, str, str]]:
    name = os.path.splitext(os.path.basename(path))[0]
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            yield "", "", f"{name}:{number}"  # an empty line: skipped and counted
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise CorpusDataError(
                f"{path}:{number}: no tab; expected 'source<TAB>target', got {line[:60]!r}"
            )
        yield fields[0], fields[1], f"{name}:{number}"


def read_rows(pattern: str, root: str, options: dict) -> Iterator[Tuple[str, str, str]]:
    """(source, target, id) for every line (pair) of one split pattern's file(s)."""
    if options["format"] == PARALLEL:
        return read_parallel(
            root, pattern[: -len(".*")], options["source_lang"], options["target_lang"]
        )
    return read_tsv(os.path.join(root, pattern))


class PairsToExamples(beam.DoFn):
    """Stripped pairs -> tf.Examples; a pair with an empty side goes to the SKIPPED output."""

    SKIPPED = "skipped"

    def process(self, row):
        source, target, pair_id = row
        source, target = source.strip(), target.strip()
        if not source or not target:
            yield beam.pvalue.TaggedOutput(self.SKIPPED, pair_id)
            return
        yield make_example(source, target, pair_id)


def check_not_empty(count: int, where: str) -> int:
    if not count:
        raise CorpusDataError(f"{where}: no sentence pairs")
    return count


class Executor(LayoutExecutor):
    """Sentence pairs -> tf.Examples, with a seeded hash split when the corpus has no split."""

    def detect_layout(self, data_dir: str, options: dict):
        return detect_layout(
            data_dir, options["source_lang"], options["target_lang"], int(options["eval_percent"])
        )

    def GetInputSourceToExamplePTransform(self) -> beam.PTransform:
        raise NotImplementedError("read_splits reads the corpus itself")

    def Do(self, input_dict, output_dict, exec_properties) -> None:
        examples = artifact_utils.get_single_instance(
            output_dict[standard_component_specs.EXAMPLES_KEY]
        )
        # The pipeline counts pairs and skipped pairs into a file per span (beside the splits,
        # where every worker and this process can reach it); they become artifact properties.
        self._counts_dir = examples.uri
        super().Do(input_dict, output_dict, exec_properties)
        counts = {"pairs": 0, "skipped": 0}
        for path in file_io.glob(os.path.join(examples.uri, COUNTS_FILE + ".*")):
            with fileio.open(path) as f:
                for key, value in json.load(f).items():
                    counts[key] += value
            fileio.remove(path)
        examples.set_int_custom_property(SKIPPED_PROPERTY, counts["skipped"])
        examples.set_int_custom_property(PAIRS_PROPERTY, counts["pairs"])
        logging.info("Read %d sentence pairs", counts["pairs"])
        if counts["skipped"]:
            logging.warning("Skipped %d sentence pairs with an empty side", counts["skipped"])

    def read_splits(
        self, pipeline, exec_properties: Dict[str, Any]
    ) -> Dict[str, beam.pvalue.PCollection]:
        input_config, output_config = read_split_configs(exec_properties)
        options = read_options(exec_properties)
        root = exec_properties[standard_component_specs.INPUT_BASE_KEY]
        splits, counts = {}, []
        # Only the split's pattern enters the Beam graph: a worker reads each file (pair).
        for split in input_config.splits:
            name, where = split.name, os.path.join(root, split.pattern)
            rows = (
                pipeline
                | f"Pattern{name}" >> beam.Create([split.pattern])
                | f"Read{name}" >> beam.FlatMap(read_rows, root, options)
                | f"Spread{name}" >> beam.Reshuffle()
            )
            converted = rows | f"ToExample{name}" >> beam.ParDo(PairsToExamples()).with_outputs(
                PairsToExamples.SKIPPED, main="examples"
            )
            splits[name] = converted.examples
            counts += [
                converted.examples
                | f"CountPairs{name}" >> beam.combiners.Count.Globally()
                | f"CheckPairs{name}" >> beam.Map(check_not_empty, where)
                | f"KeyPairs{name}" >> beam.Map(lambda n: ("pairs", n)),
                converted[PairsToExamples.SKIPPED]
                | f"CountSkipped{name}" >> beam.combiners.Count.Globally()
                | f"KeySkipped{name}" >> beam.Map(lambda n: ("skipped", n)),
            ]
        counts_dir = getattr(self, "_counts_dir", None)  # None: the graph built outside Do()
        if counts_dir:
            span = exec_properties.get("span") or 0
            counts_path = os.path.join(counts_dir, f"{COUNTS_FILE}.{span}")
            _ = (
                counts
                | "AllCounts" >> beam.Flatten()
                | "Sum" >> beam.CombinePerKey(sum)
                | "AsDict" >> beam.combiners.ToDict()
                | "AsJson" >> beam.Map(json.dumps)
                | "WriteCounts" >> beam.io.WriteToText(counts_path, shard_name_template="")
            )
        if not output_config.split_config.splits:
            return splits
        return split_by_seeded_hash(
            splits["train"], input_config, output_config, int(options["split_seed"])
        )
