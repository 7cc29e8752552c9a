"""Benchmark: the pipeline image as built here, and what its CUDA layer would add.

    .venv/bin/python -m benchmarks.image [--image IMAGE] [--build] [--name NAME]

With `--build`, times `make image` (scripts/image.sh: buildah on these machines, the base
stand-in reused when it exists, the lock's wheels from the host's uv cache; CA_BUNDLE and
BASE_IMAGE from the environment). Then, of the image (CPU build, GPU=0): its size as buildah
stores it (uncompressed), its check inside (every module every compiled job names imports:
pipeline/image_check.py) with its seconds, the seconds to import the stack in a fresh
container against this environment's, and `pip check`. The CUDA layer (GPU=1: TensorFlow's
CUDA wheels from PyPI) is not built here: its wheels are resolved against the runtime lock as
the Dockerfile resolves them (`uv pip compile`), and their download sizes read from PyPI's
simple index (its JSON form, PEP 691 and 700): an estimate of what it adds (installed, the
libraries are about as large again). Writes benchmarks/results/image/<name>.json.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

from benchmarks import report

REPO = report.REPO
IMPORT_STACK = (
    "import tensorflow, tfx, apache_beam, tensorflow_transform, tensorflow_model_analysis"
)


def in_image(image: str, command: list) -> tuple:
    """(seconds, stdout) of `command` in a new container of `image` (chroot isolation)."""
    container = subprocess.run(
        ["buildah", "from", "--pull-never", "--quiet", image],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        started = time.monotonic()
        result = subprocess.run(
            ["buildah", "run", "--isolation", "chroot", container, "--", *command],
            capture_output=True,
            text=True,
        )
        seconds = time.monotonic() - started
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed in {image}:\n{result.stderr[-3000:]}")
        return seconds, result.stdout
    finally:
        subprocess.run(["buildah", "rm", container], capture_output=True)


def image_bytes(image: str) -> int:
    listed = json.loads(
        subprocess.run(
            ["buildah", "images", "--json", image], capture_output=True, text=True, check=True
        ).stdout
    )
    size = listed[0]["size"]  # e.g. "3.99 GB"
    number, unit = size.split()
    return int(float(number) * {"kB": 1e3, "MB": 1e6, "GB": 1e9}[unit])


def cuda_wheels() -> list:
    """[(package, version, download bytes)] the Dockerfile's GPU=1 step would add."""
    with tempfile.NamedTemporaryFile("w", suffix=".in", delete=False) as wanted:
        wanted.write("tensorflow[and-cuda]==2.16.2\n")
    resolved = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "uv"),
            "pip",
            "compile",
            wanted.name,
            "-c",
            os.path.join(REPO, "requirements", "runtime-lock.txt"),
            "--override",
            os.path.join(REPO, "requirements", "overrides.txt"),
            "--python-version",
            "3.10",
            "--python-platform",
            "x86_64-manylinux_2_28",
            "--no-header",
            "--no-annotate",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    os.unlink(wanted.name)
    with open(os.path.join(REPO, "requirements", "runtime-lock.txt")) as f:
        locked = {line.split("==")[0].lower() for line in f if "==" in line}
    added = []
    for line in resolved.splitlines():
        if "==" not in line:
            continue
        package, version = line.strip().split("==")
        if package.lower() in locked:
            continue
        # The index's JSON page (PEP 691), with each file's size (PEP 700).
        request = urllib.request.Request(
            f"https://pypi.org/simple/{package}/",
            headers={"Accept": "application/vnd.pypi.simple.v1+json"},
        )
        with urllib.request.urlopen(request) as answer:
            files = json.load(answer)["files"]
        wheels = [
            f
            for f in files
            if f"-{version}-" in f["filename"]
            and "x86_64" in f["filename"]
            and "manylinux" in f["filename"]
        ]
        added.append((package, version, max((f.get("size", 0) for f in wheels), default=0)))
    return added


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="localhost/tfx-transformers:dev")
    parser.add_argument("--build", action="store_true", help="time `make image` first")
    parser.add_argument("--name", default=report.hardware_name())
    args = parser.parse_args(argv)
    measured = {}
    if args.build:
        started = time.monotonic()
        subprocess.run(["make", "image", f"IMAGE={args.image}"], cwd=REPO, check=True)
        measured["make image seconds"] = round(time.monotonic() - started, 1)
    measured["image GB (uncompressed, CPU)"] = round(image_bytes(args.image) / 1e9, 2)
    seconds, output = in_image(args.image, ["python", "-m", "pipeline.image_check"])
    check = json.loads(output.strip().splitlines()[-1])
    measured["image check seconds"] = round(seconds, 1)
    measured["image check failures"] = len(check["failures"])
    _, pip_check = in_image(
        args.image, ["python", "scripts/pip_check.py", "requirements/overrides.txt"]
    )
    image_import = min(in_image(args.image, ["python", "-c", IMPORT_STACK])[0] for _ in range(2))
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", IMPORT_STACK], capture_output=True, check=True)
    here_import = time.monotonic() - started
    measured["stack import seconds, in a new container"] = round(image_import, 1)
    measured["stack import seconds, here"] = round(here_import, 1)
    wheels = cuda_wheels()
    measured["CUDA wheels"] = len(wheels)
    measured["CUDA wheels download GB (estimate)"] = round(sum(w[2] for w in wheels) / 1e9, 2)
    report.save(
        "image",
        args.name,
        {
            "title": "The pipeline image built here (CPU), and its CUDA layer estimated",
            "image": args.image,
            "measured": measured,
            "notes": [
                f"the image check: {check['jobs']} compiled jobs, imported {check['imported']}",
                pip_check.strip().splitlines()[-1],
                "built with buildah (chroot isolation) on a Debian 12 stand-in for Beam's SDK "
                "image (scripts/image_base.sh), without Beam's boot binary",
                "the CUDA layer is not built here: its size is PyPI's wheel downloads, "
                "resolved against the runtime lock",
            ],
            "tables": [
                {
                    "title": "What GPU=1 adds: TensorFlow's CUDA wheels (download bytes)",
                    "columns": ["package", "version", "MB"],
                    "rows": [[p, v, round(b / 1e6)] for p, v, b in wheels],
                }
            ],
        },
    )
    print(json.dumps(measured))


if __name__ == "__main__":
    main()
