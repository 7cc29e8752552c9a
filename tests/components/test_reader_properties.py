"""Property-based tests (hypothesis) of the ExampleGens' readers: given any file contents, a
reader yields examples, skips and counts what it is built to skip, or stops with an error that
names the file; no other exception escapes, and nothing is silently read wrong."""

import gzip
import io
import itertools
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from components.image_example_gen.executor import RECORD_BYTES, check_image, read_binary_batch
from components.image_example_gen.layout import ImageDataError
from components.parallel_corpus_example_gen.executor import read_lines, read_tsv
from components.parallel_corpus_example_gen.layout import CorpusDataError
from components.reviews_example_gen.executor import read_aclimdb_review, read_csv_reviews
from components.reviews_example_gen.layout import ReviewDataError
from components.unlabeled_example_gen.executor import UnlabeledDataError, read_inputs

PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# File contents: raw bytes, or text (valid UTF-8) with the characters that matter to readers.
CONTENTS = st.binary(max_size=300) | st.text(
    alphabet=st.sampled_from('ab ,"\t\n\r\x00é★<br/>') | st.characters(codec="utf-8"),
    max_size=300,
).map(lambda text: text.encode("utf-8"))


def written(data: bytes, name: str) -> str:
    folder = tempfile.mkdtemp()
    path = f"{folder}/{name}"
    with open(path, "wb") as f:
        f.write(data)
    return path


def read_all(reader, path):
    """Everything the reader yields, or the error it raises (which must name the file)."""
    errors = (ReviewDataError, CorpusDataError, ImageDataError, UnlabeledDataError)
    try:
        return list(reader(path)), None
    except errors as error:
        assert path in str(error), str(error)
        return None, error


@PROPERTY
@given(CONTENTS)
def test_an_aclimdb_review_is_read_whole_or_refused_naming_the_file(data):
    folder = tempfile.mkdtemp()
    path = f"{folder}/train/pos/7_9.txt"
    import os

    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(data)
    examples, error = read_all(lambda p: [read_aclimdb_review(p, folder)], path)
    if error is None:
        (example,) = examples
        text = example.features.feature["text"].bytes_list.value[0].decode("utf-8")
        assert text == data.decode("utf-8").lstrip("\ufeff") and text.strip()


@PROPERTY
@given(CONTENTS, st.booleans())
def test_a_csv_file_of_any_contents_is_read_or_refused_naming_the_file(data, with_header):
    if with_header:
        data = b"text,label\n" + data
    examples, error = read_all(read_csv_reviews, written(data, "reviews.csv"))
    if error is None:
        assert examples  # a file with no reviews is refused, not read as nothing
        for example in examples:
            assert example.features.feature["label"].int64_list.value[0] in (0, 1)
            assert example.features.feature["text"].bytes_list.value[0].strip()


@PROPERTY
@given(CONTENTS)
def test_a_tsv_corpus_is_read_line_by_line_or_refused_naming_the_file(data):
    rows, error = read_all(read_tsv, written(data, "pairs.tsv"))
    if error is None:
        text = data.decode("utf-8").lstrip("\ufeff")
        # One row per line: a pair, or an empty line skipped (and counted) as ("", "").
        assert len(rows) == len(io.StringIO(text, newline="").readlines())
        assert all((source == target == "") or target is not None for source, target, _ in rows)


@PROPERTY
@given(st.binary(max_size=300))
def test_a_gzip_corpus_of_any_bytes_is_read_or_refused_naming_the_file(data):
    lines, error = read_all(read_lines, written(data, "train.de.gz"))
    if error is None:
        assert "".join(lines) == "".join(
            gzip.decompress(data).decode("utf-8").lstrip("\ufeff").splitlines()
        )


@PROPERTY
@given(st.binary(max_size=3 * RECORD_BYTES), st.integers(min_value=1, max_value=10))
def test_a_cifar_batch_of_any_bytes_is_read_record_by_record_or_refused(data, classes):
    names = [f"class{i}" for i in range(classes)]
    records, error = read_all(lambda p: read_binary_batch(p, names), written(data, "b.bin"))
    if error is None:
        assert len(records) == len(data) // RECORD_BYTES and len(data) % RECORD_BYTES == 0
        assert all(0 <= label < classes for _, label, _ in records)


def png(size: int) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.zeros((size, size, 3), np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


@PROPERTY
@given(st.binary(max_size=200), st.integers(min_value=0, max_value=200))
def test_an_image_file_of_any_bytes_or_cut_short_is_refused_naming_it(data, cut):
    for contents in (data, png(8)[:cut]):
        path = written(contents, "cat.png")
        try:
            check_image(path, contents)
        except ImageDataError as error:
            assert path in str(error)
        else:  # what passes decodes to the whole image (a cut after its pixels loses none)
            with Image.open(io.BytesIO(contents)) as image:
                assert not np.asarray(image.convert("RGB")).any() and image.size == (8, 8)


@PROPERTY
@given(CONTENTS, st.sampled_from(["text", "source", "image"]))
def test_an_unlabeled_jsonl_file_is_read_or_refused_naming_the_file_and_line(data, feature):
    items, error = read_all(lambda p: read_inputs(p, feature), written(data, "inputs.jsonl"))
    if error is None:
        for input_id, value in items:
            assert input_id.startswith("inputs.jsonl:") and isinstance(value, bytes) and value


def test_a_csv_with_a_nul_byte_or_a_huge_field_names_the_file():
    for data in (b'text,label\n"a\x00b",1\n', b'text,label\n"' + b"x" * 200_000 + b'",1\n'):
        path = written(data, "odd.csv")
        try:
            rows = list(read_csv_reviews(path))
        except ReviewDataError as error:
            assert path in str(error)
        else:
            assert len(rows) == 1


@pytest.mark.parametrize("lines", [[b"\xff\xfe", b"ok"], [b"ok\tfine", b"\xe9\tx"]])
def test_bytes_that_are_not_utf8_name_the_line(lines):
    path = written(b"\n".join(lines), "pairs.tsv")
    with pytest.raises(CorpusDataError, match=r"not valid UTF-8 at line \d"):
        list(itertools.islice(read_tsv(path), 5))


def test_every_dataset_example_gen_raises_one_catchable_data_error():
    from components.data_error import DataError
    from components.image_example_gen.layout import ImageDataError
    from components.parallel_corpus_example_gen.layout import CorpusDataError
    from components.reviews_example_gen.layout import ReviewDataError

    for error in (ImageDataError, CorpusDataError, ReviewDataError):
        assert issubclass(error, DataError) and issubclass(error, ValueError)
