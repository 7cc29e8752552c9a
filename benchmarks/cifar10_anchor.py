"""Benchmark: the CIFAR-10 anchor on this project's data: airbench94 (Keller Jordan's CNN, 94.0%
on CIFAR-10's test set as released; or airbench95, the same network wider, 95.0%) trained on
the pipeline's training split of the JPEG tarball and tested on its validation split.

    python -m benchmarks.cifar10_anchor --airbench cifar10-airbench/legacy/airbench94.py \\
        --runs 5 --log airbench.log                       # on a CUDA GPU, with PyTorch
    python -m benchmarks.cifar10_anchor --from-log airbench.log --name NAME   # anywhere

`--epochs E` trains airbench's network for E epochs instead of its script's (9.9 for airbench94;
its schedule and whitening-bias epochs unchanged, the learning-rate triangle spans the run): the
anchor's accuracy against training arithmetic on this data. `--from-log` takes several logs, a
row each.

The project's images are JPEG re-encodings (quality 75, chroma subsampled 4:2:0: each 2x2 block
of a 32x32 image shares one colour), not the released pixels that airbench's 94% was measured
on. This writes the tarball as airbench's own cache files (`cifar10/train.pt`, `test.pt`: uint8
images and labels), the training split and the validation split exactly as ImageExampleGen cuts
them (a seeded hash of the image's path, seed 42, 10%), and runs the published script unchanged
but for its number of runs (its `range(25)`), so that the anchor's accuracy is measured on the
data the project is measured on. The script is not part of this repository: fetch it from
github.com/KellerJordan/cifar10-airbench. It needs PyTorch, torchvision and a CUDA GPU.
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np

from benchmarks import report
from benchmarks.cifar10_recipes import CLASSES, load

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS_IN_SCRIPT = "for run in range(25)"  # the scripts' loop over their 25 runs
EPOCHS_IN_SCRIPT = re.compile(r"'train_epochs': ([0-9.]+),")  # their hyper-parameters
WIDTHS_IN_SCRIPT = re.compile(r"'block([123])': (\d+),")
AIRBENCH94_SCRIPT, AIRBENCH94_EPOCHS, AIRBENCH94_WIDTHS = "airbench94.py", 9.9, (64, 256, 256)
# airbench94's training arithmetic per image of its training set, over its 9.9 epochs (the
# issue's count: 0.36 PFLOP for 50,000 images).
PFLOP_PER_IMAGE = 0.36 / 50_000


def convolution_macs(widths) -> int:
    """Multiply-adds of a forward pass of airbench's network with these block widths, in its
    3x3 convolutions (the rest is under 1%): after the 2x2 whitening convolution (24 channels,
    31 x 31), each block convolves at its input's size, pools by 2, and convolves again."""
    sizes, channels = (31, 15, 7, 3), (24, *widths)
    return sum(
        9 * channels[b] * channels[b + 1] * sizes[b] ** 2
        + 9 * channels[b + 1] ** 2 * sizes[b + 1] ** 2
        for b in range(3)
    )


def training_pflop(train_images: int, epochs: float, widths) -> float:
    """The issue's count for airbench94, scaled by epochs and by the convolutions' arithmetic
    of these widths against airbench94's."""
    scale = convolution_macs(widths) / convolution_macs(AIRBENCH94_WIDTHS)
    return round(PFLOP_PER_IMAGE * train_images * epochs / AIRBENCH94_EPOCHS * scale, 3)


def split(tarball: str, cache: str) -> dict:
    """{"train" | "test": (uint8 images (N, 32, 32, 3), labels (N,))}: ImageExampleGen's
    training and validation splits of the tarball (cifar10_recipes.load's, whose selection
    split is part of the pipeline's training split)."""
    data = load(tarball, cache)
    train = [data[part] for part in ("train", "selection")]
    return {
        "train": tuple(np.concatenate(arrays) for arrays in zip(*train)),
        "test": data["val"],
    }


def prepare(tarball: str, script: str, runs: int, workdir: str, epochs=None) -> tuple:
    """Writes airbench's cache files and its script (with `runs` runs of `epochs` epochs, by
    default the script's own) under workdir: (the script's path, "script / epochs / widths /
    train: N images / test: M images" lines)."""
    with open(script) as f:
        code = f.read()
    widths = dict(WIDTHS_IN_SCRIPT.findall(code))
    if RUNS_IN_SCRIPT not in code or not EPOCHS_IN_SCRIPT.search(code) or len(widths) != 3:
        raise SystemExit(
            f"{script}: no {RUNS_IN_SCRIPT!r}, 'train_epochs' or block widths; "
            "is it legacy/airbench94.py or airbench95.py?"
        )
    if epochs is None:
        epochs = float(EPOCHS_IN_SCRIPT.search(code).group(1))  # type: ignore[union-attr]
    import torch

    os.makedirs(os.path.join(workdir, "cifar10"), exist_ok=True)
    counts = f"script: {os.path.basename(script)}\nepochs: {epochs:g}\n"
    counts += f"widths: {widths['1']} {widths['2']} {widths['3']}\n"
    for name, (images, labels) in split(tarball, os.path.join(workdir, "decoded.npz")).items():
        torch.save(
            {  # int64 labels: PyTorch's cross-entropy takes no int32 targets on a GPU
                "images": torch.tensor(images),
                "labels": torch.tensor(labels.astype(np.int64)),
                "classes": CLASSES,
            },
            os.path.join(workdir, "cifar10", f"{name}.pt"),
        )
        counts += f"{name}: {len(labels)} images\n"
    path = os.path.join(workdir, os.path.basename(script))
    with open(path, "w") as f:
        code = code.replace(RUNS_IN_SCRIPT, f"for run in range({runs})")
        f.write(EPOCHS_IN_SCRIPT.sub(f"'train_epochs': {epochs!r},", code, count=1))
    return path, counts


def parse(log: str) -> dict:
    """The script, epochs and widths, the split's sizes, the runs and the mean and spread of
    their test-time-augmented accuracy, from the log (prepare's lines, then airbench's output;
    a log without the first three is airbench94's own), and the training arithmetic."""
    found = re.search(r"Mean: ([0-9.]+)\s+Std: ([0-9.]+)", log)
    sizes = dict(re.findall(r"^(train|test):? (\d+)", log, re.M))
    if not found or len(sizes) != 2:
        raise SystemExit("the log has no split sizes or no 'Mean: ... Std: ...': did it finish?")
    script = re.search(r"^script: (\S+)$", log, re.M)
    epochs_line = re.search(r"^epochs: ([0-9.]+)$", log, re.M)
    widths_line = re.search(r"^widths: (\d+) (\d+) (\d+)$", log, re.M)
    widths = tuple(map(int, widths_line.groups())) if widths_line else AIRBENCH94_WIDTHS
    epochs = float(epochs_line.group(1)) if epochs_line else AIRBENCH94_EPOCHS
    train_images = int(sizes["train"])
    return {
        "script": script.group(1) if script else AIRBENCH94_SCRIPT,
        "widths": list(widths),
        "accuracy_mean": float(found.group(1)),
        "accuracy_std": float(found.group(2)),
        "train_images": train_images,
        "test_images": int(sizes["test"]),
        "runs": len(re.findall(r"\|\s+eval\s+\|", log)),  # airbench's final row of a run
        "epochs": epochs,
        "training_pflop": training_pflop(train_images, epochs, widths),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        default=os.path.join(REPO, "..", "shared", "data", "cifar10", "cifar10_train_jpeg.tar.gz"),
    )
    parser.add_argument(
        "--airbench", help="the path of airbench's legacy/airbench94.py (or airbench95.py)"
    )
    parser.add_argument("--runs", type=int, default=5, help="airbench's own is 25")
    parser.add_argument("--epochs", type=float, help="default: the script's (airbench94's 9.9)")
    parser.add_argument("--workdir", default="/tmp/cifar10_anchor")
    parser.add_argument("--log", help="also write airbench's output here")
    parser.add_argument(
        "--from-log", nargs="+", help="train nothing: read earlier runs' --log, a row each"
    )
    parser.add_argument("--name", help="write benchmarks/results/cifar10_anchor/NAME.json")
    parser.add_argument("--device", default="", help="the GPU it ran on, for the results file")
    args = parser.parse_args(argv)
    logs = []
    for path in args.from_log or ():
        with open(path) as f:
            logs.append(f.read())
    if not logs:
        if not args.airbench:
            parser.error("--airbench PATH (or --from-log LOG ...)")
        script, counts = prepare(args.data, args.airbench, args.runs, args.workdir, args.epochs)
        run = subprocess.run(
            [sys.executable, script], cwd=args.workdir, capture_output=True, text=True
        )
        logs.append(counts + run.stdout + run.stderr)
        print(logs[0], flush=True)
        if args.log:
            with open(args.log, "w") as f:
                f.write(logs[0])
        if run.returncode:
            raise SystemExit(f"airbench94 exited with {run.returncode}")
    rows = [parse(log) for log in logs]
    for row in rows:
        print(row)
    if args.name:
        columns = ("script", "epochs", "runs", "accuracy_mean", "accuracy_std", "training_pflop")
        report.save(
            "cifar10_anchor",
            args.name,
            {
                "device": args.device,
                "measured": rows[0],
                "tables": [
                    {
                        "title": "airbench on the project's JPEGs: trained on the pipeline's "
                        "training split, tested on its validation split (flip and shift "
                        "test-time views, airbench's level 2)",
                        "columns": [
                            "script",
                            "epochs",
                            "runs",
                            "val accuracy: mean",
                            "std",
                            "training PFLOP",
                        ],
                        "rows": [[row[c] for c in columns] for row in rows],
                    }
                ],
            },
            references=[
                ["val accuracy", "accuracy_mean", 0.94, "airbench94 on the released test set"]
            ],
        )


if __name__ == "__main__":
    main()
