"""The classes of a labelled text data set: their order, each raw label's index, and reading
them from a folder when the pipeline is built."""

import pytest

from components.reviews_example_gen.classes import (
    BINARY,
    detect_classes,
    format_classes,
    label_index,
    lookup_label,
    newest_span,
    order_classes,
    parse_classes,
)
from components.reviews_example_gen.layout import ReviewDataError


@pytest.mark.parametrize(
    "raw, classes",
    [
        (["pos", "neg", "pos"], BINARY),
        (["0", "1"], BINARY),
        (["Negative", "POSITIVE"], BINARY),
        (["neg", "1"], BINARY),  # both spellings of IMDB's two classes
        (["10", "2", "1", "02"], ("1", "2", "10")),  # by value, as written canonically
        (["shipping", "billing", "login"], ("billing", "login", "shipping")),
        (["neg", "neutral", "pos"], ("neg", "neutral", "pos")),  # not IMDB's: as written
        (["0", "1", "2"], ("0", "1", "2")),
    ],
)
def test_classes_are_ordered_imdb_first_then_by_value_then_by_name(raw, classes):
    assert order_classes(raw, "data.csv") == classes


def test_fewer_than_two_classes_are_refused_naming_the_data():
    with pytest.raises(ReviewDataError, match=r"data\.csv: 1 distinct label\(s\) \['spam'\]"):
        order_classes(["spam", " spam "], "data.csv")
    # IMDB's labels are its two classes, even where one is missing (the drift gate's case).
    assert order_classes(["pos", "POSITIVE"], "data.csv") == BINARY


def test_a_raw_label_finds_its_index_by_name_value_or_imdb_alias():
    imdb = label_index(BINARY)
    assert [lookup_label(imdb, raw) for raw in ("neg", "POS", " 1 ", "negative", "2")] == [
        0,
        1,
        1,
        0,
        None,
    ]
    stars = label_index(("1", "2", "10"))
    assert [lookup_label(stars, raw) for raw in ("10", "+2", "01", "3", "ten")] == [
        2,
        1,
        0,
        None,
        None,
    ]
    queues = label_index(("billing", "login"))
    assert lookup_label(queues, "Billing") is None  # names are case-sensitive, but IMDB's


def test_the_classes_option_round_trips_and_refuses_what_cannot_be_a_class_list():
    assert parse_classes(format_classes(("a b", "c"))) == ("a b", "c")
    assert parse_classes("") == ()
    with pytest.raises(ValueError, match="names a class twice"):
        parse_classes("a,b,a")
    with pytest.raises(ValueError, match="names one class"):
        parse_classes("a")
    with pytest.raises(ReviewDataError, match="holds a ','"):
        format_classes(("yes, really", "no"))


def test_classes_are_read_from_folders_or_every_csv_file(tmp_path):
    for topic in ("sport", "arts"):
        (tmp_path / "news" / "train" / topic).mkdir(parents=True)
    (tmp_path / "news" / "train" / "unsup").mkdir()  # aclImdb's unlabelled folder: no class
    assert detect_classes(str(tmp_path / "news")) == ("arts", "sport")
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "train.csv").write_text("text,label\nhi,1\n", "utf-8")
    (tmp_path / "csv" / "test.csv").write_text('label,text\n5,"a, b"\n3,c\n', "utf-8")
    assert detect_classes(str(tmp_path / "csv")) == ("1", "3", "5")


def test_with_a_span_pattern_the_newest_span_is_read(tmp_path):
    for span in (2, 10):
        (tmp_path / f"span-{span}").mkdir()
    assert newest_span(str(tmp_path / "span-{SPAN}")) == str(tmp_path / "span-10")
    with pytest.raises(FileNotFoundError, match="no span folders match"):
        newest_span(str(tmp_path / "day-{SPAN}"))
