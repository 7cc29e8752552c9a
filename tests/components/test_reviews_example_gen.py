import re

import pytest

from components.dataset_example_gen import as_exec_properties
from components.reviews_example_gen import ReviewsExampleGen
from components.reviews_example_gen.classes import BINARY
from components.reviews_example_gen.layout import ReviewDataError
from tests.components.example_gen_util import (
    assert_graph_does_not_grow,
    resolve_layout,
    run_executor,
    value,
)
from tests.conftest import write_aclimdb


def test_aclimdb_keeps_the_original_train_test_split(aclimdb_dir, tmp_path):
    splits = run_executor(ReviewsExampleGen(str(aclimdb_dir)), tmp_path / "out")
    assert sorted(splits) == ["eval", "train"]
    assert len(splits["train"]) == len(splits["eval"]) == 16
    by_id = {value(e, "id"): e for e in splits["train"]}
    first = by_id["train/pos/0_7"]
    assert (value(first, "label"), value(first, "rating")) == (1, 7)
    assert value(first, "text") == "a wonderful film, I loved it"
    negative = by_id["train/neg/13_2"]
    assert (value(negative, "label"), value(negative, "rating")) == (0, 2)
    assert all(value(e, "id").startswith("test/") for e in splits["eval"])


def test_accepts_the_aclimdb_folder_itself_and_skips_unsup(aclimdb_dir, tmp_path):
    (aclimdb_dir / "aclImdb" / "train" / "unsup").mkdir()
    (aclimdb_dir / "aclImdb" / "train" / "unsup" / "0_0.txt").write_text("unlabelled")
    (aclimdb_dir / "aclImdb" / "train" / "urls_pos.txt").write_text("http://example")
    splits = run_executor(ReviewsExampleGen(str(aclimdb_dir / "aclImdb")), tmp_path / "out")
    assert len(splits["train"]) == 16


def test_with_unlabeled_aclimdbs_unsup_reviews_are_read_into_their_own_split(aclimdb_dir, tmp_path):
    unsup = aclimdb_dir / "aclImdb" / "train" / "unsup"
    unsup.mkdir()
    (unsup / "0_0.txt").write_text("an unlabelled review", "utf-8")
    (unsup / "1_0.txt").write_text("\ufeffanother one", "utf-8")
    splits = run_executor(ReviewsExampleGen(str(aclimdb_dir), unlabeled=True), tmp_path / "out")
    assert sorted(splits) == ["eval", "train", "unlabeled"]
    assert len(splits["train"]) == len(splits["eval"]) == 16  # labelled splits unchanged
    unlabeled = sorted(splits["unlabeled"], key=lambda e: value(e, "id"))
    assert [value(e, "id") for e in unlabeled] == ["train/unsup/0_0.txt", "train/unsup/1_0.txt"]
    assert [value(e, "text") for e in unlabeled] == ["an unlabelled review", "another one"]
    assert {(value(e, "label"), value(e, "rating")) for e in unlabeled} == {(-1, -1)}
    assert value(unlabeled[0], "text_words") == 3  # profiled as the labelled reviews are


def test_with_unlabeled_a_hash_split_layout_gives_the_unlabeled_texts_no_share(tmp_path):
    data = write_aclimdb(tmp_path / "data", splits=("train",), copies=8)  # 128 reviews
    splits = run_executor(
        ReviewsExampleGen(str(data), eval_percent=25, unlabeled=True), tmp_path / "out"
    )
    plain = run_executor(ReviewsExampleGen(str(data), eval_percent=25), tmp_path / "plain")
    assert sorted(splits) == ["eval", "train", "unlabeled"]
    assert splits["unlabeled"] == []  # no unsup folder: an empty split
    for split in ("train", "eval"):  # the same seeded split as without
        assert sorted(value(e, "id") for e in splits[split]) == sorted(
            value(e, "id") for e in plain[split]
        )


def test_with_unlabeled_csv_data_reads_an_unlabeled_folder_of_text_and_json_lines(tmp_path):
    data = tmp_path / "csv"
    (data / "unlabeled").mkdir(parents=True)
    (data / "reviews.csv").write_text("text,label\ngood,pos\nbad,neg\n", "utf-8")
    (data / "unlabeled" / "a.txt").write_text("a whole review\non two lines", "utf-8")
    (data / "unlabeled" / "b.jsonl").write_text('{"text": "one"}\n\n{"text": "two"}\n', "utf-8")
    splits = run_executor(ReviewsExampleGen(str(data), unlabeled=True), tmp_path / "out")
    texts = {value(e, "id"): value(e, "text") for e in splits["unlabeled"]}
    assert texts == {
        "unlabeled/a.txt": "a whole review\non two lines",
        "unlabeled/b.jsonl:1": "one",
        "unlabeled/b.jsonl:3": "two",
    }
    assert len(splits["train"]) + len(splits["eval"]) == 2


def test_a_bad_unlabeled_text_names_its_file_and_line(tmp_path):
    data = tmp_path / "csv"
    (data / "unlabeled").mkdir(parents=True)
    (data / "reviews.csv").write_text("text,label\ngood,pos\nbad,neg\n", "utf-8")
    (data / "unlabeled" / "b.jsonl").write_text('{"text": "one"}\n{"txt": "two"}\n', "utf-8")
    with pytest.raises(ReviewDataError, match=re.escape("b.jsonl: line 2")):
        run_executor(ReviewsExampleGen(str(data), unlabeled=True), tmp_path / "out")


def test_seeded_hash_split_without_a_test_folder(tmp_path):
    data = write_aclimdb(tmp_path / "data", splits=("train",), copies=8)  # 128 reviews

    def eval_ids(seed, out):
        splits = run_executor(
            ReviewsExampleGen(str(data), eval_percent=25, split_seed=seed), tmp_path / out
        )
        assert len(splits["train"]) + len(splits["eval"]) == 128
        return sorted(value(e, "id") for e in splits["eval"])

    first = eval_ids(42, "a")
    assert 16 <= len(first) <= 48  # about 25% of 128
    assert eval_ids(42, "b") == first  # the same seed gives the same split
    assert eval_ids(7, "c") != first


def test_csv_with_quoted_multiline_reviews(tmp_path):
    data = tmp_path / "csv"
    data.mkdir()
    (data / "train.csv").write_text(
        'text,label,rating\n"Great film,\nloved it",pos,9\nterrible,0,\n"fine ""ok"" movie",1,\n',
        "utf-8",
    )
    (data / "test.csv").write_text("label,text\nneg,boring\n", "utf-8")
    splits = run_executor(ReviewsExampleGen(str(data)), tmp_path / "out")
    train = splits["train"]
    assert [value(e, "text") for e in train] == [
        "Great film,\nloved it",
        "terrible",
        'fine "ok" movie',
    ]
    assert [value(e, "label") for e in train] == [1, 0, 1]
    assert [value(e, "rating") for e in train] == [9, -1, -1]
    assert value(train[1], "id") == "train.csv:4"
    assert [value(e, "label") for e in splits["eval"]] == [0]


def test_missing_directory_is_an_error_when_it_runs_not_when_it_is_built(tmp_path):
    component = ReviewsExampleGen(str(tmp_path / "nowhere"))  # builds: nothing is read yet
    assert component.exec_properties["input_base"] == str(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="review data directory not found: .*nowhere"):
        resolve_layout(component)


def test_directory_without_reviews_is_an_error(tmp_path):
    with pytest.raises(ReviewDataError, match="no reviews found"):
        resolve_layout(ReviewsExampleGen(str(tmp_path)))


def test_the_layout_found_at_run_time_is_recorded_on_the_artifact(aclimdb_dir, tmp_path):
    from tfx.types import standard_artifacts

    examples = standard_artifacts.Examples()
    run_executor(ReviewsExampleGen(str(aclimdb_dir)), tmp_path / "out", examples)
    assert examples.get_string_custom_property("data_layout") == "aclimdb"
    assert examples.get_string_custom_property("data_source") == str(aclimdb_dir)
    assert examples.split_names == '["train", "eval"]'


def expect_error(data_dir, tmp_path, pattern, classes=BINARY):
    """The run fails with `pattern`, given the classes as the pipeline gives them (BINARY:
    IMDB's; () for none, so that the ExampleGen reads them from the data)."""
    with pytest.raises(Exception, match=pattern):
        run_executor(ReviewsExampleGen(str(data_dir), classes=classes), tmp_path / "out")


def test_unknown_label_folder_names_the_folder(aclimdb_dir, tmp_path):
    (aclimdb_dir / "aclImdb" / "train" / "maybe").mkdir()
    (aclimdb_dir / "aclImdb" / "train" / "maybe" / "1_5.txt").write_text("hmm")
    expect_error(aclimdb_dir, tmp_path, r"train/maybe: unknown label folder 'maybe'")


def test_empty_review_names_the_file(aclimdb_dir, tmp_path):
    (aclimdb_dir / "aclImdb" / "train" / "pos" / "99_8.txt").write_text("  \n ")
    expect_error(aclimdb_dir, tmp_path, r"train/pos/99_8\.txt: empty review")


def test_non_utf8_review_names_the_file_and_byte(aclimdb_dir, tmp_path):
    (aclimdb_dir / "aclImdb" / "test" / "neg" / "99_2.txt").write_bytes(b"caf\xe9 was awful")
    expect_error(aclimdb_dir, tmp_path, r"test/neg/99_2\.txt: not valid UTF-8 at byte 3")


def test_bad_file_name_and_contradicting_rating(aclimdb_dir, tmp_path):
    bad_name = aclimdb_dir / "aclImdb" / "train" / "pos" / "review.txt"
    bad_name.write_text("fine")
    expect_error(aclimdb_dir, tmp_path, r"pos/review\.txt: file name is not ID_RATING\.txt")
    bad_name.unlink()
    (aclimdb_dir / "aclImdb" / "train" / "pos" / "98_2.txt").write_text("fine")
    expect_error(aclimdb_dir, tmp_path, r"pos/98_2\.txt: rating 2 contradicts its folder 'pos'")


def test_missing_or_empty_label_folder(aclimdb_dir, tmp_path):
    for review in (aclimdb_dir / "aclImdb" / "train" / "neg").iterdir():
        review.unlink()
    expect_error(aclimdb_dir, tmp_path, r"train/neg: label folder has no \.txt reviews")
    (aclimdb_dir / "aclImdb" / "train" / "neg").rmdir()
    expect_error(aclimdb_dir, tmp_path, re.escape("missing label folder(s) ['neg']"))
    expect_error(aclimdb_dir, tmp_path, re.escape("missing label folder(s) ['neg']"), ())


@pytest.mark.parametrize(
    "content, pattern",
    [
        ("text,label\ngood,maybe\n", r"train\.csv:2: unknown label 'maybe'"),
        ("text,label\n,1\n", r"train\.csv:2: empty review"),
        ("review,sentiment\ngood,1\n", r"train\.csv: CSV header must name 'text' and 'label'"),
        ("text,label\n", r"train\.csv: CSV file has no reviews"),
        ("text,label,rating\ngood,1,ten\n", r"train\.csv:2: rating 'ten' is not an integer"),
    ],
)
def test_bad_csv_rows_name_file_and_line(tmp_path, content, pattern):
    data = tmp_path / "csv"
    data.mkdir()
    (data / "train.csv").write_text(content, "utf-8")
    (data / "test.csv").write_text("text,label\nfine,1\n", "utf-8")
    expect_error(data, tmp_path, pattern)


def test_the_beam_graph_does_not_grow_with_the_data(tmp_path):
    """The review files are listed and read by Beam's workers: none is named in the job."""
    small, large = (write_aclimdb(tmp_path / f"x{copies}", copies=copies) for copies in (1, 4))
    assert_graph_does_not_grow(ReviewsExampleGen, small, large)


def driver_resolved(component) -> dict:
    """The exec properties after TFX's FileBasedDriver (span, version, fingerprint), as a
    local run's executor receives them."""
    from tfx.components.example_gen.driver import FileBasedDriver

    return FileBasedDriver(metadata_handle=None).resolve_exec_properties(
        as_exec_properties(component), None, None
    )


def test_a_span_pattern_reads_the_latest_span_and_fingerprints_it(tmp_path):
    from components.reviews_example_gen.executor import Executor

    write_aclimdb(tmp_path / "reviews" / "span-1")
    write_aclimdb(tmp_path / "reviews" / "span-2", copies=2)
    component = ReviewsExampleGen(str(tmp_path / "reviews" / "span-{SPAN}"))
    assert component.exec_properties["input_base"] == str(tmp_path / "reviews")
    first = driver_resolved(component)
    assert first["span"] == 2 and first["version"] is None
    splits = run_executor(component, tmp_path / "out", exec_properties=first)
    assert len(splits["train"]) == 32  # span 2's reviews, not span 1's
    resolved = Executor().resolve_layout(first)
    assert resolved["input_base"] == str(tmp_path / "reviews" / "span-2" / "aclImdb")
    # The same spans give the same fingerprint (a cached run); a new span moves on to it.
    assert driver_resolved(component)["input_fingerprint"] == first["input_fingerprint"]
    write_aclimdb(tmp_path / "reviews" / "span-3")
    assert driver_resolved(component)["span"] == 3


def test_a_version_needs_a_span_before_it(tmp_path):
    with pytest.raises(ValueError, match=r"a \{VERSION\} needs a \{SPAN\} before it"):
        ReviewsExampleGen(str(tmp_path / "reviews-{VERSION}"))


def test_a_window_reads_the_newest_spans_that_exist_each_in_its_own_layout(tmp_path):
    from tfx.types import standard_artifacts

    reviews = tmp_path / "reviews"
    write_aclimdb(reviews / "span-1")  # outside a window of 3 ending at span 4
    csv = reviews / "span-2"
    csv.mkdir(parents=True)
    (csv / "train.csv").write_text("text,label\ngood,1\nbad,0\n", "utf-8")
    (csv / "test.csv").write_text("text,label\nfine,1\n", "utf-8")
    write_aclimdb(reviews / "span-4", copies=2)  # no span 3
    component = ReviewsExampleGen(str(reviews / "span-{SPAN}"), spans=3)
    artifact = standard_artifacts.Examples()
    splits = run_executor(component, tmp_path / "out", artifact, driver_resolved(component))
    assert (len(splits["train"]), len(splits["eval"])) == (2 + 32, 1 + 32)
    assert {value(e, "text") for e in splits["train"]} >= {"good", "bad"}
    assert artifact.get_string_custom_property("spans") == "2,4"
    assert artifact.get_string_custom_property("data_layout") == "aclimdb,csv"
    # The newest span alone, as the pipeline's validated ExampleGen reads it.
    alone = ReviewsExampleGen(str(reviews / "span-{SPAN}"))
    assert (
        len(
            run_executor(alone, tmp_path / "alone", exec_properties=driver_resolved(alone))["train"]
        )
        == 32
    )


def test_a_window_takes_each_older_spans_latest_version(tmp_path):
    reviews = tmp_path / "reviews"
    write_aclimdb(reviews / "span-1" / "v1", copies=4)
    write_aclimdb(reviews / "span-1" / "v2")
    write_aclimdb(reviews / "span-2" / "v1", copies=2)
    component = ReviewsExampleGen(str(reviews / "span-{SPAN}" / "v{VERSION}"), spans=2)
    splits = run_executor(component, tmp_path / "out", exec_properties=driver_resolved(component))
    assert len(splits["train"]) == 16 + 32  # span 1 at v2, span 2 at v1


def test_a_window_needs_a_span_pattern(tmp_path):
    with pytest.raises(
        ValueError,
        match=r"spans=2 needs a data folder pattern with a "
        r"\{SPAN\}, such as data/span-\{SPAN\}",
    ):
        ReviewsExampleGen(str(tmp_path / "reviews"), spans=2)


def test_without_the_driver_the_executor_resolves_the_newest_span_itself(tmp_path):
    """A Kubeflow Pipelines 2 job (`compile --target kubeflow`) runs no driver: the executor
    finds the latest span and stamps the Examples as TFX's driver would; after a driver, it
    changes nothing."""
    from tfx.types import standard_artifacts

    from components.dataset_example_gen import resolved_without_driver

    write_aclimdb(tmp_path / "reviews" / "span-1", splits=("train",), copies=1)
    write_aclimdb(tmp_path / "reviews" / "span-2", splits=("train",), copies=1)
    component = ReviewsExampleGen(str(tmp_path / "reviews" / "span-{SPAN}"))
    given = as_exec_properties(component)
    assert "span" not in given  # as the container entrypoint gives it without a driver
    examples = standard_artifacts.Examples()
    resolved = resolved_without_driver(given, [examples])
    assert (resolved["span"], resolved["version"]) == (2, None)
    assert '"pattern": "span-2/*"' in resolved["input_config"]
    assert examples.get_int_custom_property("span") == 2
    assert examples.get_string_custom_property("input_fingerprint").startswith("split:span")
    assert resolved_without_driver(resolved, []) is resolved


def write_tickets(folder, rows):
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["text,label"] + [f'"{text}",{label}' for text, label in rows]
    (folder / "tickets.csv").write_text("\n".join(lines) + "\n", "utf-8")
    return folder


TICKETS = [(f"ticket {i} about {q}", q) for i, q in enumerate(["shipping", "billing", "login"] * 8)]


def test_a_csv_of_any_string_labels_is_read_into_sorted_classes_with_their_names(tmp_path):
    data = write_tickets(tmp_path / "tickets", TICKETS)
    splits = run_executor(ReviewsExampleGen(str(data), eval_percent=25), tmp_path / "out")
    rows = [e for split in splits.values() for e in split]
    assert len(rows) == 24
    labels = {(value(e, "label_name"), value(e, "label")) for e in rows}
    assert labels == {("billing", 0), ("login", 1), ("shipping", 2)}
    assert resolve_layout(ReviewsExampleGen(str(data)))["custom_config"].count("billing,login")


def test_integer_labels_keep_their_numeric_order_and_names(tmp_path):
    stars = [(f"{n} stars from me {i}", n) for i in range(3) for n in (10, 2, 1, 5)]
    data = write_tickets(tmp_path / "stars", stars)
    splits = run_executor(ReviewsExampleGen(str(data), eval_percent=25), tmp_path / "out")
    labels = {(value(e, "label_name"), value(e, "label")) for s in splits.values() for e in s}
    assert labels == {("1", 0), ("2", 1), ("5", 2), ("10", 3)}


def test_label_folders_of_any_names_are_classes_and_their_files_any_names(tmp_path):
    for split in ("train", "test"):
        for topic in ("sport", "politics", "science"):
            folder = tmp_path / "news" / split / topic
            folder.mkdir(parents=True)
            (folder / "story.txt").write_text(f"a {split} story on {topic}", "utf-8")
            (folder / "7_9.txt").write_text(f"another {topic} story", "utf-8")
    splits = run_executor(ReviewsExampleGen(str(tmp_path / "news")), tmp_path / "out")
    assert len(splits["train"]) == len(splits["eval"]) == 6
    by_id = {value(e, "id"): e for e in splits["train"]}
    story = by_id["train/science/story"]
    assert (value(story, "label"), value(story, "label_name"), value(story, "rating")) == (
        1,
        "science",
        -1,
    )
    assert value(by_id["train/sport/7_9"], "rating") == 9  # a rating-shaped name keeps it


def test_imdb_keeps_its_labels_and_names_the_classes_negative_and_positive(aclimdb_dir, tmp_path):
    splits = run_executor(ReviewsExampleGen(str(aclimdb_dir)), tmp_path / "out")
    pairs = {(value(e, "label"), value(e, "label_name")) for e in splits["train"]}
    assert pairs == {(0, "negative"), (1, "positive")}


def test_a_label_outside_the_built_classes_names_file_line_and_classes(tmp_path):
    data = write_tickets(tmp_path / "tickets", TICKETS + [("a new kind of ticket", "refund")])
    expect_error(
        data,
        tmp_path,
        r"tickets\.csv:26: unknown label 'refund'; the classes are "
        r"\['billing', 'login', 'shipping'\]",
        ("billing", "login", "shipping"),
    )


def test_one_class_or_no_label_column_is_refused_naming_the_file(tmp_path):
    data = write_tickets(tmp_path / "one", [(f"text {i}", "spam") for i in range(6)])
    expect_error(data, tmp_path, r"tickets\.csv: 1 distinct label\(s\) \['spam'\]", ())
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "texts.csv").write_text("text\nhello\n", "utf-8")
    expect_error(tmp_path / "none", tmp_path, r"texts\.csv: CSV header must name 'text' and", ())
