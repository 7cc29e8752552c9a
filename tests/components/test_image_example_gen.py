import io

import numpy as np
import pytest
from PIL import Image

from components.image_example_gen import ImageDataError, ImageExampleGen
from components.image_example_gen.executor import RECORD_BYTES
from tests.components.example_gen_util import (
    assert_graph_does_not_grow,
    resolve_layout,
    run_executor,
    value,
)
from tests.image_util import CLASSES, encode, pattern, write_binary_release, write_folders


def run(data_dir, tmp_path, **kwargs):
    return run_executor(ImageExampleGen(str(data_dir), **kwargs), tmp_path / "out")


def pixels(example):
    data = example.features.feature["image"].bytes_list.value[0]
    return np.asarray(Image.open(io.BytesIO(data)))


def test_binary_release_records_become_png_with_label_and_name(tmp_path):
    records = write_binary_release(tmp_path / "cifar-10-batches-bin")
    splits = run(tmp_path, tmp_path, eval_percent=25)  # finds the release's subfolder
    assert sorted(splits) == ["eval", "train"]
    examples = splits["train"] + splits["eval"]
    assert len(examples) == len(records) == 24
    for example in examples:
        batch, index = value(example, "id").split(":")
        label, expected = records[(batch, int(index))]
        assert example.features.feature["image"].bytes_list.value[0][:4] == b"\x89PNG"
        np.testing.assert_array_equal(pixels(example), expected)  # planes -> rows x cols x RGB
        assert value(example, "label") == label
        assert value(example, "label_name") == CLASSES[label]


def test_the_seeded_split_is_stable_and_depends_on_the_seed(tmp_path):
    write_binary_release(tmp_path / "data", per_class=10)
    ids = {
        seed: sorted(
            value(e, "id")
            for e in run(tmp_path / "data", tmp_path / str(seed), split_seed=seed)["eval"]
        )
        for seed in (1, 2)
    }
    again = sorted(
        value(e, "id") for e in run(tmp_path / "data", tmp_path / "again", split_seed=1)["eval"]
    )
    assert again == ids[1] and ids[1] != ids[2]


def test_a_truncated_record_names_the_file_and_byte_offset(tmp_path):
    write_binary_release(tmp_path / "data", batches=1)
    batch = tmp_path / "data" / "data_batch_1.bin"
    batch.write_bytes(batch.read_bytes()[:-100])
    offset = 11 * RECORD_BYTES  # 12 records, the last one cut
    with pytest.raises(
        ImageDataError,
        match=rf"data_batch_1.bin: truncated record at byte "
        rf"offset {offset}",
    ):
        run(tmp_path / "data", tmp_path)


def test_a_label_byte_outside_the_class_list_is_refused(tmp_path):
    write_binary_release(tmp_path / "data", batches=1, classes=["cat", "dog", "ship"])
    (tmp_path / "data" / "batches.meta.txt").write_text("cat\ndog\n")
    with pytest.raises(ImageDataError, match="record 2 .* has label 2, but there are 2 classes"):
        run(tmp_path / "data", tmp_path)


def test_the_pickle_release_is_refused_with_a_pointer_to_the_binary_one(tmp_path):
    data = tmp_path / "cifar-10-batches-py"
    data.mkdir()
    (data / "data_batch_1").write_bytes(b"\x80\x04not unpickled")
    (data / "batches.meta").write_bytes(b"\x80\x04")
    with pytest.raises(ImageDataError, match="pickle release.*arbitrary code.*binary release"):
        resolve_layout(ImageExampleGen(str(data)))


def test_image_folders_keep_their_splits_with_labels_from_the_class_list(tmp_path):
    write_folders(tmp_path / "data", splits=("train", "val"))
    splits = run(tmp_path / "data", tmp_path)
    assert sorted(splits) == ["eval", "train"]
    assert len(splits["train"]) == len(splits["eval"]) == 9
    bird = next(e for e in splits["eval"] if value(e, "id") == "val/bird/1.png")
    assert (value(bird, "label"), value(bird, "label_name")) == (2, "bird")
    np.testing.assert_array_equal(pixels(bird), pattern(2, 1))  # the PNG bytes, kept as they are
    jpeg = next(e for e in splits["train"] if value(e, "id") == "train/airplane/2.jpg")
    assert jpeg.features.feature["image"].bytes_list.value[0][:2] == b"\xff\xd8"


def test_classes_txt_fixes_the_label_order(tmp_path):
    write_folders(tmp_path / "data", splits=("train",), classes=["dog", "cat"])
    (tmp_path / "data" / "classes.txt").write_text("zebra\ncat\ndog\n")
    examples = run(tmp_path / "data", tmp_path, eval_percent=50)
    labels = {
        value(e, "label_name"): value(e, "label") for split in examples.values() for e in split
    }
    assert labels == {"cat": 1, "dog": 2}


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            lambda root: (root / "train" / "bird" / "0.png").write_bytes(
                b"\x89PNG\r\n\x1a\nbroken"
            ),
            r"train/bird/0.png: not a readable image",
        ),
        (
            lambda root: (root / "train" / "bird" / "1.png").write_bytes(
                encode(pattern(2, 1), format="WEBP")
            ),
            r"train/bird/1.png: a WEBP image; convert it to PNG or JPEG",
        ),
        (
            lambda root: (root / "eval" / "horse").mkdir()
            or (root / "eval" / "horse" / "0.png").write_bytes(encode(pattern(0, 0))),
            r"eval/horse: unknown class folder 'horse'",
        ),
        (
            lambda root: [p.unlink() for p in (root / "eval" / "bird").iterdir()],
            r"eval/bird: empty class folder",
        ),
    ],
)
def test_bad_images_and_folders_are_refused_naming_the_file(tmp_path, damage, message):
    root = write_folders(tmp_path / "data")
    damage(root)
    with pytest.raises(ImageDataError, match=message):
        run(root, tmp_path)


def test_a_directory_without_images_is_refused(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("nothing here")
    with pytest.raises(ImageDataError, match="no images found"):
        resolve_layout(ImageExampleGen(str(tmp_path / "data")))


@pytest.mark.parametrize("write", [write_binary_release, write_folders])
def test_the_beam_graph_does_not_grow_with_the_data(tmp_path, write):
    """The images are listed and read by Beam's workers: nothing of them is in the job."""
    for scale in (1, 4):
        write(tmp_path / f"x{scale}", per_class=2 * scale)
    assert_graph_does_not_grow(ImageExampleGen, tmp_path / "x1", tmp_path / "x4")


def write_records(path, examples):
    import tensorflow as tf

    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(
        str(path), options="GZIP" if path.name.endswith(".gz") else None
    ) as writer:
        for example in examples:
            writer.write(example.SerializeToString())


def image_example(label, index, with_id=True):
    from components.image_example_gen.executor import make_example

    example = make_example(encode(pattern(label, index)), label, CLASSES[label], f"r{index}")
    if not with_id:
        del example.features.feature["id"]
    return example


def test_tfrecords_in_split_folders_keep_their_splits(tmp_path):
    write_records(
        tmp_path / "data" / "train" / "a.tfrecord.gz", [image_example(i % 3, i) for i in range(6)]
    )
    write_records(tmp_path / "data" / "eval" / "b.tfrecord", [image_example(1, 9)])
    splits = run(tmp_path / "data", tmp_path)
    assert sorted(value(e, "id") for e in splits["train"]) == [f"r{i}" for i in range(6)]
    assert [(value(e, "label"), value(e, "label_name")) for e in splits["eval"]] == [
        (1, "automobile")
    ]


def test_tfrecords_without_ids_are_split_by_seeded_hash_of_the_example(tmp_path):
    examples = [image_example(i % 3, i, with_id=False) for i in range(40)]
    write_records(tmp_path / "data" / "images.tfrecord", examples)
    first, again = (run(tmp_path / "data", tmp_path / name, eval_percent=25) for name in ("a", "b"))
    assert len(first["train"]) + len(first["eval"]) == 40
    assert 0 < len(first["eval"]) < 20
    assert sorted(e.SerializeToString() for e in first["eval"]) == sorted(
        e.SerializeToString() for e in again["eval"]
    )


def test_a_tfrecord_without_the_image_features_names_the_file(tmp_path):
    import tensorflow as tf

    stray = tf.train.Example()
    stray.features.feature["text"].bytes_list.value.append(b"not an image")
    write_records(tmp_path / "data" / "train" / "bad.tfrecord", [image_example(0, 0), stray])
    with pytest.raises(
        ImageDataError,
        match=r"train/bad\.tfrecord: a tf.Example without one "
        r"bytes 'image' \(it has \['text'\]\)",
    ):
        run(tmp_path / "data", tmp_path)


def mixed_sizes(root, split, sizes):
    """<root>/<split>/<class>/: an image per (width, height) in `sizes`, PNG and JPEG, RGB, grey
    and RGBA."""
    for label, name in enumerate(("cat", "dog")):
        folder = root / split / name
        folder.mkdir(parents=True)
        for index, (width, height) in enumerate(sizes):
            image = pattern(label, index, max(width, height))[:height, :width]
            mode = ("RGB", "L", "RGBA")[index % 3]
            converted = Image.fromarray(image).convert(mode)
            buffer = io.BytesIO()
            converted.save(buffer, format="JPEG" if mode == "L" else "PNG")
            (folder / f"{index}.{'jpg' if mode == 'L' else 'png'}").write_bytes(buffer.getvalue())


def test_images_of_any_size_aspect_and_mode_are_read_with_their_sizes(tmp_path):
    sizes = [(32, 32), (640, 480), (17, 211)]
    mixed_sizes(tmp_path / "photos", "train", sizes)
    mixed_sizes(tmp_path / "photos", "val", sizes[:1])
    splits = run(tmp_path / "photos", tmp_path)
    assert len(splits["train"]) == 6 and len(splits["eval"]) == 2
    met = {(value(e, "image_width"), value(e, "image_height")) for e in splits["train"]}
    assert met == set(sizes)
    assert {value(e, "label_name") for e in splits["train"]} == {"cat", "dog"}


def test_a_path_label_csv_reads_images_relative_to_it_with_the_labels_as_classes(tmp_path):
    root = write_folders(tmp_path / "data", splits=("pictures",), per_class=2)
    rows = [f"pictures/{name}/{index}.png,{name}" for name in CLASSES for index in range(2)] + [
        f"{root}/pictures/{CLASSES[0]}/0.png,{CLASSES[0]}"
    ]  # an absolute path too
    (root / "images.csv").write_text("path,label\n" + "\n".join(rows) + "\n", "utf-8")
    layout = resolve_layout(ImageExampleGen(str(root)))
    assert '"format": "image_csv"' in layout["custom_config"].replace("\\", "")
    splits = run(root, tmp_path, eval_percent=50)
    examples = [e for split in splits.values() for e in split]
    assert len(examples) == 2 * len(CLASSES) + 1
    assert {value(e, "label_name"): value(e, "label") for e in examples} == {
        name: i for i, name in enumerate(sorted(CLASSES))
    }


@pytest.mark.parametrize(
    "rows, message",
    [
        ("pictures/bird/0.png,bird\nnowhere.png,bird\n", r"nowhere\.png: no such image file"),
        ("pictures/bird/0.png,bird\npictures/bird/1.png,\n", r"images\.csv:3: a row needs"),
        ("pictures/bird/0.png,bird\n", r"name 1 label\(s\) \['bird'\]; a classifier needs"),
    ],
)
def test_a_bad_csv_row_is_refused_naming_the_file(tmp_path, rows, message):
    root = write_folders(tmp_path / "data", splits=("pictures",), per_class=2)
    extra = "pictures/cat/0.png,cat\n" if "nowhere" in rows or ",\n" in rows else ""
    (root / "images.csv").write_text("path,label\n" + rows + extra, "utf-8")
    with pytest.raises(ImageDataError, match=message):
        run(root, tmp_path, eval_percent=50)
