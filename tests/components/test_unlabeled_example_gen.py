"""UnlabeledExampleGen: the inputs of a folder, by file type, into tf.Examples of the task's raw
feature and an id; a bad input stops the run naming its file and line."""

import base64
import io
import json

import pytest
from PIL import Image

from components.unlabeled_example_gen import UnlabeledExampleGen
from components.unlabeled_example_gen.executor import UnlabeledDataError, read_inputs
from tests.components.example_gen_util import run_executor, value


def png(side: int = 5) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (side, side), (200, 10, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


def read(folder, feature: str, tmp_path) -> list:
    splits = run_executor(UnlabeledExampleGen(str(folder), feature=feature), tmp_path / "out")
    assert list(splits) == ["unlabeled"]
    return sorted(
        (value(e, "id"), e.features.feature[feature].bytes_list.value[0])
        for e in splits["unlabeled"]
    )


def test_reviews_are_read_a_file_each_and_a_json_line_each(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("Great film.\nSee it.", encoding="utf-8")
    (folder / "b.jsonl").write_text(
        json.dumps({"text": "Dull"}) + "\n\n" + json.dumps({"text": "Café"}) + "\n",
        encoding="utf-8",
    )
    (folder / "notes.md").write_text("ignored")
    assert read(folder, "text", tmp_path) == [
        ("a.txt", b"Great film.\nSee it."),
        ("b.jsonl:1", b"Dull"),
        ("b.jsonl:3", "Café".encode()),
    ]


def test_source_sentences_are_read_a_line_each(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "s.txt").write_text("Ein Hund läuft.\n\n  Zwei Männer.  \n", encoding="utf-8")
    assert read(folder, "source", tmp_path) == [
        ("s.txt:1", "Ein Hund läuft.".encode()),
        ("s.txt:3", "Zwei Männer.".encode()),
    ]


def test_images_are_read_a_file_each_and_from_base64_lines(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "cat.png").write_bytes(png(7))
    (folder / "more.jsonl").write_text(
        json.dumps({"image": base64.b64encode(png(40)).decode()}) + "\n"
    )
    assert read(folder, "image", tmp_path) == [("cat.png", png(7)), ("more.jsonl:1", png(40))]


@pytest.mark.parametrize(
    "feature,name,content,message",
    [
        (
            "text",
            "r.jsonl",
            '{"text": "fine"}\n{"text": ""}\n',
            "r.jsonl: line 2: 'text': the text is empty",
        ),
        (
            "text",
            "r.jsonl",
            '{"text": "fine"}\n{"review": "x"}\n',
            "r.jsonl: line 2: expected an object with 'text'",
        ),
        ("source", "s.jsonl", "not json\n", "s.jsonl: line 1: not JSON"),
        ("text", "empty.txt", "  \n", "empty.txt: the text is empty"),
        (
            "image",
            "i.jsonl",
            '{"image": "aGVsbG8="}\n',
            "i.jsonl: line 1: 'image': not a JPEG or PNG",
        ),
        ("image", "broken.png", b"\x89PNG\r\n\x1a\n-truncated", "broken.png: not a readable image"),
    ],
)
def test_a_bad_input_names_its_file_and_line(tmp_path, feature, name, content, message):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(UnlabeledDataError, match=str(tmp_path) + "/" + message.replace("(", r"\(")):
        list(read_inputs(str(path), feature))


def test_a_folder_without_inputs_is_refused_naming_the_suffixes(tmp_path):
    (tmp_path / "photo.png").write_bytes(png())
    with pytest.raises(
        UnlabeledDataError,
        match=r"no input files for 'source' \(expected "
        r"\*\.jsonl, \*\.txt\)",
    ):
        run_executor(UnlabeledExampleGen(str(tmp_path), feature="source"), tmp_path / "out")
