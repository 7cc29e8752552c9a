import io
import sys
import tarfile
import types

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
        "script": "airbench94.py",  # a log without prepare's lines is airbench94's own
        "widths": [64, 256, 256],
        "runs": 1,
        "epochs": 9.9,
        "training_pflop": 0.324,  # 0.36 PFLOP per 50,000 images
    }
    with pytest.raises(SystemExit, match="did it finish"):
        cifar10_anchor.parse(AIRBENCH_TAIL.replace("Mean:", "Median:"))


def test_a_script_without_airbenchs_run_loop_is_refused(tmp_path):
    script = tmp_path / "other.py"
    script.write_text("print('not airbench')\n")
    with pytest.raises(SystemExit, match="other.py: no 'for run in range"):
        cifar10_anchor.prepare("unused.tar.gz", str(script), 5, str(tmp_path / "work"), 9.9)


def test_prepare_writes_the_script_with_the_runs_and_epochs_asked_for(tmp_path, monkeypatch):
    saved = {}  # torch.save's files, without PyTorch
    fake_torch = types.SimpleNamespace(
        tensor=np.asarray, save=lambda obj, path: saved.update({path: obj})
    )
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    script = tmp_path / "airbench94.py"
    script.write_text(
        "hyp = {'opt': {\n        'train_epochs': 15,\n},\n"
        "  'net': {'widths': {'block1': 128, 'block2': 384, 'block3': 384,}}}\n"
        "runs = [r for r in range(25)]\n"
        "accs = [main(run) for run in range(25)]\n"
    )
    names = [f"train/{c}/{i:04d}.jpg" for c in ("cat", "dog") for i in range(12)]
    write_tarball(tmp_path / "c.tar.gz", names)
    work = tmp_path / "work"
    path, counts = cifar10_anchor.prepare(str(tmp_path / "c.tar.gz"), str(script), 3, str(work), 30)
    written = open(path).read()
    assert "'train_epochs': 30," in written and "15" not in written
    assert "for run in range(3)" in written and "r for r in range(25)" in written
    assert counts.startswith("script: airbench94.py\nepochs: 30\nwidths: 128 384 384\n")
    train = saved[str(work / "cifar10" / "train.pt")]
    assert len(train["labels"]) + len(saved[str(work / "cifar10" / "test.pt")]["labels"]) == 24
    parsed = cifar10_anchor.parse(counts + AIRBENCH_TAIL.split("\n", 2)[2])
    assert (parsed["epochs"], parsed["widths"]) == (30.0, [128, 384, 384])
    _, counts = cifar10_anchor.prepare(str(tmp_path / "c.tar.gz"), str(script), 3, str(work))
    assert "epochs: 15\n" in counts  # by default, the script's own


def test_the_anchors_arithmetic_is_its_convolutions_counted_by_hand():
    airbench94 = (  # (input size, channels in, channels out) of its six 3x3 convolutions
        (31, 24, 64),
        (15, 64, 64),
        (15, 64, 256),
        (7, 256, 256),
        (7, 256, 256),
        (3, 256, 256),
    )
    by_hand = sum(size * size * 9 * c_in * c_out for size, c_in, c_out in airbench94)
    assert cifar10_anchor.convolution_macs((64, 256, 256)) == by_hand == 117_868_032
    # Three times a forward pass's multiply-adds (forward, two products back), twice as FLOPs:
    # 0.350 PFLOP for 9.9 epochs of 50,000 images, the 0.36 to a hundredth.
    assert 6 * by_hand * 50_000 * 9.9 / 1e15 == pytest.approx(0.36, abs=0.01)
    assert cifar10_anchor.training_pflop(50_000, 9.9, (64, 256, 256)) == 0.36
    assert cifar10_anchor.training_pflop(50_000, 9.9, (128, 384, 384)) == round(
        0.36 * cifar10_anchor.convolution_macs((128, 384, 384)) / by_hand, 3
    )


def test_from_log_writes_the_anchor_with_its_arithmetic(tmp_path, monkeypatch):
    log = tmp_path / "airbench.log"
    log.write_text(AIRBENCH_TAIL)
    saved = {}
    monkeypatch.setattr(
        cifar10_anchor.report, "save", lambda b, n, r, references: saved.update(r=r, n=n)
    )
    longer = tmp_path / "airbench-30.log"
    longer.write_text("epochs: 30\n" + AIRBENCH_TAIL.replace("0.9001", "0.9200"))
    cifar10_anchor.main(["--from-log", str(log), str(longer), "--name", "x"])
    measured = saved["r"]["measured"]
    assert measured["runs"] == 1 and measured["accuracy_mean"] == 0.9001
    assert measured["training_pflop"] == 0.324  # 0.36 PFLOP per 50,000 images
    assert saved["r"]["tables"][0]["rows"] == [
        ["airbench94.py", 9.9, 1, 0.9001, 0.0031, 0.324],
        ["airbench94.py", 30.0, 1, 0.92, 0.0031, 0.982],  # 30 / 9.9 times the arithmetic
    ]
