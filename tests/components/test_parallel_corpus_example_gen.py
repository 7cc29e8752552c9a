import gzip

import pytest
from tfx.types import standard_artifacts

from components.parallel_corpus_example_gen import (
    CorpusDataError,
    ParallelCorpusExampleGen,
    executor,
)
from components.parallel_corpus_example_gen.executor import SKIPPED_PROPERTY
from tests.components.example_gen_util import (
    assert_graph_does_not_grow,
    resolve_layout,
    run_executor,
    value,
)

GERMAN = ["Ein Mann läuft.", "Eine Frau sitzt im Park.", "Zwei Kinder spielen."]
ENGLISH = ["A man is running.", "A woman is sitting in the park.", "Two children are playing."]


def write_lines(path, lines, compress=False):
    data = "".join(f"{line}\n" for line in lines).encode("utf-8")
    if compress:
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def run(data_dir, tmp_path, **kwargs):
    artifact = standard_artifacts.Examples()
    gen = ParallelCorpusExampleGen(
        str(data_dir), kwargs.pop("source_lang", "de"), kwargs.pop("target_lang", "en"), **kwargs
    )
    return run_executor(gen, tmp_path / "out", artifact), artifact


def test_parallel_files_keep_their_splits_and_pair_line_by_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_lines(data / "train.de", GERMAN, compress=True)  # .gz and plain mix
    write_lines(data / "train.en", ENGLISH)
    write_lines(data / "val.de", GERMAN[:1])
    write_lines(data / "val.en", ENGLISH[:1])
    splits, artifact = run(data, tmp_path)
    assert sorted(splits) == ["eval", "train"]
    pairs = [(value(e, "source"), value(e, "target"), value(e, "id")) for e in splits["train"]]
    assert sorted(pairs) == sorted(zip(GERMAN, ENGLISH, ["train:1", "train:2", "train:3"]))
    assert [value(e, "target") for e in splits["eval"]] == ENGLISH[:1]
    assert artifact.get_int_custom_property(SKIPPED_PROPERTY) == 0


def test_source_and_target_languages_are_arguments(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "dev"):
        write_lines(data / f"{split}.de", GERMAN)
        write_lines(data / f"{split}.en", ENGLISH)
    splits, _ = run(data, tmp_path, source_lang="en", target_lang="de")
    example = next(e for e in splits["eval"] if value(e, "id") == "dev:1")
    assert (value(example, "source"), value(example, "target")) == (ENGLISH[0], GERMAN[0])


def test_tsv_pairs_with_a_seeded_split_and_extra_columns_ignored(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    lines = [f"Sentence {i}.\tSatz {i}.\tCC-BY attribution #{i}" for i in range(200)]
    write_lines(data / "spa.txt", lines)
    (data / "_about.txt").write_text("about the corpus")

    def eval_ids(seed, out):
        artifact = standard_artifacts.Examples()
        splits = run_executor(
            ParallelCorpusExampleGen(str(data), "en", "de", split_seed=seed, eval_percent=25),
            tmp_path / out,
            artifact,
        )
        assert len(splits["train"]) + len(splits["eval"]) == 200
        return sorted(value(e, "id") for e in splits["eval"])

    first = eval_ids(42, "a")
    assert first == eval_ids(42, "b")  # stable
    assert first != eval_ids(7, "c")  # and seeded
    assert 30 <= len(first) <= 70


def test_empty_lines_are_skipped_and_counted(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_lines(data / "train.de", ["Ein Mann läuft.", "", "Ein Hund.", "  "])
    write_lines(data / "train.en", ["A man is running.", "Nothing on the left.", "", "x"])
    write_lines(data / "val.de", GERMAN)
    write_lines(data / "val.en", ENGLISH)
    splits, artifact = run(data, tmp_path)
    assert [value(e, "id") for e in splits["train"]] == ["train:1"]
    assert artifact.get_int_custom_property(SKIPPED_PROPERTY) == 3


def test_different_line_counts_name_both_files(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_lines(data / "train.de", GERMAN)
    write_lines(data / "train.en", ENGLISH[:2], compress=True)
    with pytest.raises(CorpusDataError, match=r"train\.de has 3 lines, .*train\.en\.gz has 2"):
        run(data, tmp_path)


def test_non_utf8_bytes_name_file_line_and_offset(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_lines(data / "train.de", GERMAN)
    (data / "train.en").write_bytes(b"A man.\nA caf\xe9.\nTwo.\n")
    with pytest.raises(CorpusDataError, match=r"train\.en: not valid UTF-8 at line 2, byte 12"):
        run(data, tmp_path)


def test_a_missing_side_names_the_missing_file(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_lines(data / "train.de", GERMAN)
    with pytest.raises(FileNotFoundError, match=r"train\.en: missing; it pairs with .*train\.de"):
        resolve_layout(ParallelCorpusExampleGen(str(data), "de", "en"))
    with pytest.raises(FileNotFoundError, match="corpus directory not found"):
        resolve_layout(ParallelCorpusExampleGen(str(tmp_path / "nowhere"), "de", "en"))


def test_a_tsv_line_without_a_tab_is_an_error(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_lines(data / "pairs.tsv", ["Hello.\tHallo.", "no tab here"])
    with pytest.raises(CorpusDataError, match=r"pairs\.tsv:2: no tab"):
        run(data, tmp_path)


def test_a_folder_without_a_corpus_is_an_error(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.md").write_text("nothing")
    with pytest.raises(CorpusDataError, match="no parallel corpus found"):
        resolve_layout(ParallelCorpusExampleGen(str(tmp_path / "data"), "de", "en"))


def test_the_beam_graph_does_not_grow_with_the_data(tmp_path):
    """The corpus is read by Beam's workers, a file pair each: no sentence is in the job."""
    for scale in (1, 4):
        data = tmp_path / f"x{scale}"
        data.mkdir()
        for split in ("train", "val"):
            write_lines(data / f"{split}.de", GERMAN * 10 * scale)
            write_lines(data / f"{split}.en", ENGLISH * 10 * scale)
    assert_graph_does_not_grow(
        lambda d: ParallelCorpusExampleGen(d, "de", "en"), tmp_path / "x1", tmp_path / "x4"
    )


def test_a_window_counts_the_pairs_of_every_span(tmp_path):
    from tests.components.test_reviews_example_gen import driver_resolved

    for span, lines in ((1, 3), (2, 2)):
        data = tmp_path / "pairs" / f"span-{span}"
        data.mkdir(parents=True)
        write_lines(data / "train.de", GERMAN[:lines] + [""])
        write_lines(data / "train.en", ENGLISH[:lines] + ["Nothing on the left."])
        write_lines(data / "val.de", GERMAN[:1])
        write_lines(data / "val.en", ENGLISH[:1])
    artifact = standard_artifacts.Examples()
    gen = ParallelCorpusExampleGen(str(tmp_path / "pairs" / "span-{SPAN}"), "de", "en", spans=2)
    splits = run_executor(gen, tmp_path / "out", artifact, driver_resolved(gen))
    assert sorted(value(e, "source") for e in splits["train"]) == sorted(GERMAN + GERMAN[:2])
    assert artifact.get_int_custom_property("pairs") == 5 + 2
    assert artifact.get_int_custom_property(SKIPPED_PROPERTY) == 2


@pytest.mark.parametrize("gzipped", [False, True])
def test_lines_end_at_newline_crlf_or_a_lone_carriage_return_and_keep_the_rest(
    tmp_path, gzipped, monkeypatch
):
    """As Python's text files read them; tf.io.gfile's own lines would drop each "\\r"."""
    monkeypatch.setattr(executor, "CHUNK_BYTES", 3)  # a "\r\n" split across two reads
    data = "Ein\tOne\r\nZwei\r\nDrei\tThree\rVier\tFo\x00ur\nfünf\r".encode("utf-8")
    path = tmp_path / ("pairs.tsv.gz" if gzipped else "pairs.tsv")
    path.write_bytes(gzip.compress(data) if gzipped else data)
    assert list(executor.read_lines(str(path))) == [
        "Ein\tOne",
        "Zwei",
        "Drei\tThree",
        "Vier\tFo\x00ur",
        "fünf",
    ]
    (tmp_path / "cr.tsv").write_bytes(b"\r")  # one empty line
    assert list(executor.read_lines(str(tmp_path / "cr.tsv"))) == [""]
