import io
import tarfile

import numpy as np
import pytest

from benchmarks import cifar10_anchor
from benchmarks.recipes import bucket
from tests.image_util import encode, pattern

AIRBENCH_TAIL = """train: 44991 images
test: 5009 images
|          |   eval  |      0.9829  |     0.9541  |   0.8880  |       0.8994  |    2.1150  |
Mean: 0.9001    Std: 0.0031
"""


def write_tarball(path, names):
    with tarfile.open(path, "w:gz") as archive:
        for index, name in enumerate(names):
            label = cifar10_anchor.CLASSES.index(name.split("/")[1])
            data = encode(pattern(label, index), "JPEG")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_split_is_image_example_gens_seeded_hash_split(tmp_path):
    names = [f"train/{c}/{i:04d}.jpg" for c in ("airplane", "frog") for i in range(20)]
    write_tarball(tmp_path / "c.tar.gz", names)
    parts = cifar10_anchor.split(str(tmp_path / "c.tar.gz"), str(tmp_path / "cache.npz"))
    test = [n for n in names if bucket(n, 42) >= 90]
    assert 0 < len(test) < 40
    assert len(parts["test"][1]) == len(test) and len(parts["train"][1]) == 40 - len(test)
    assert parts["train"][0].shape[1:] == (32, 32, 3) and parts["train"][0].dtype == np.uint8
    label = {n: cifar10_anchor.CLASSES.index(n.split("/")[1]) for n in names}
    assert sorted(parts["train"][1].tolist()) == sorted(label[n] for n in names if n not in test)
    assert sorted(parts["test"][1].tolist()) == sorted(label[n] for n in test)


def test_parse_reads_the_split_and_airbenchs_mean_and_spread():
    assert cifar10_anchor.parse(AIRBENCH_TAIL) == {
        "accuracy_mean": 0.9001,
        "accuracy_std": 0.0031,
        "train_images": 44991,
        "test_images": 5009,
    }
    with pytest.raises(SystemExit, match="did it finish"):
        cifar10_anchor.parse(AIRBENCH_TAIL.replace("Mean:", "Median:"))


def test_a_script_without_airbenchs_run_loop_is_refused(tmp_path):
    script = tmp_path / "other.py"
    script.write_text("print('not airbench')\n")
    with pytest.raises(SystemExit, match="other.py: no 'for run in range"):
        cifar10_anchor.prepare("unused.tar.gz", str(script), 5, str(tmp_path / "work"))


def test_from_log_writes_the_anchor_with_its_arithmetic(tmp_path, monkeypatch):
    log = tmp_path / "airbench.log"
    log.write_text(AIRBENCH_TAIL)
    saved = {}
    monkeypatch.setattr(
        cifar10_anchor.report, "save", lambda b, n, r, references: saved.update(r=r, n=n)
    )
    cifar10_anchor.main(["--from-log", str(log), "--runs", "5", "--name", "x"])
    measured = saved["r"]["measured"]
    assert measured["runs"] == 5 and measured["accuracy_mean"] == 0.9001
    assert measured["training_pflop"] == 0.324  # 0.36 PFLOP per 50,000 images
