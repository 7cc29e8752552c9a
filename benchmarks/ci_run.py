"""Benchmark: CI as it runs, `.ci/run`, step by step, in a fresh clone (the budget: the whole
of it within 45 minutes on the Zen 4; CI's own limit is 90).

    .venv/bin/python -m benchmarks.ci_run [--rev HEAD] [--name NAME] [--keep-image-cache]

Clones this repository at REV into a temporary folder and runs each command of its `.ci/run`
there in turn, as the script would (the same environment, `set -e`: it stops at the first that
fails), timing each, and the machine's speed before and after (benchmarks/test_suite.py's
calibration: compare runs only at the same speed). Before it, the pipeline image's build cache
is emptied (the dev image and its layers), as on a machine that has not built it; the Debian
base stand-in is kept, as a machine keeps it while its recipe is unchanged
(`--keep-image-cache`: keep the layers too).
Writes benchmarks/results/ci/<name>.json.
"""

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time

from benchmarks import report

BUDGET_MINUTES = 45.0  # .ci/run on the Zen 4 (DEVELOPERS.md)


def ci_commands(script: str) -> list:
    """The commands of `.ci/run`, in order: every line that is not a comment, the shebang,
    `set` or the `cd` to the repository root."""
    commands = []
    for line in script.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or re.match(r"^(set|cd)\b", line):
            continue
        commands.append(line)
    return commands


def empty_image_cache() -> None:
    """The dev image and buildah's cached layers removed; the base stand-in kept. A working
    container left on one of those layers keeps them (the build would then reuse them and the
    image step would time nothing): that stops the benchmark, naming the containers."""
    if not shutil.which("buildah"):
        return
    containers = subprocess.run(
        ["buildah", "containers", "--format", "{{.ContainerName}} ({{.ImageName}})"],
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    left = [" ".join(c.split()) for c in containers if c and "tfx-transformers-base" not in c]
    if left:
        raise SystemExit(
            "buildah containers would keep the image's layers: "
            + ", ".join(left)
            + " (buildah rm them, or pass --keep-image-cache)"
        )
    subprocess.run(["buildah", "rmi", "localhost/tfx-transformers:dev"], capture_output=True)
    subprocess.run(["buildah", "rmi", "--prune"], capture_output=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--name", default=f"{report.hardware_name()}-ci")
    parser.add_argument("--keep-image-cache", action="store_true")
    args = parser.parse_args(argv)
    clone = tempfile.mkdtemp(prefix="ci-run-")
    subprocess.run(["git", "clone", "--quiet", report.REPO, clone], check=True)
    subprocess.run(["git", "-C", clone, "checkout", "--quiet", args.rev], check=True)
    revision = subprocess.run(
        ["git", "-C", clone, "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not args.keep_image_cache:
        empty_image_cache()
    with open(os.path.join(clone, ".ci", "run")) as f:
        commands = ci_commands(f.read())
    from benchmarks.test_suite import machine_speed

    before = machine_speed()  # the machine's speed now: runs at other speeds do not compare
    rows, failed = [], None
    started = time.monotonic()
    for command in commands:
        print(f"$ {command}", flush=True)
        step = time.monotonic()
        result = subprocess.run(["bash", "-c", command], cwd=clone)
        minutes = (time.monotonic() - step) / 60
        rows.append([command, round(minutes, 2), result.returncode])
        print(f"  {minutes:.2f} min, exit {result.returncode}", flush=True)
        if result.returncode != 0:
            failed = command
            break
    total = (time.monotonic() - started) / 60
    after = machine_speed()
    report.save(
        "ci",
        args.name,
        {
            "title": "CI (`.ci/run`) in a fresh clone, step by step",
            "revision": revision,
            "measured": {
                "minutes": round(total, 2),
                "steps": len(rows),
                "failed": failed,
                "calibration python before, seconds": before["python"],
                "calibration matmul before, seconds": before["matmul"],
                "calibration python after, seconds": after["python"],
                "calibration matmul after, seconds": after["matmul"],
            },
            "references": [["CI against its budget", "minutes", BUDGET_MINUTES, "budget"]],
            "notes": [
                "the pipeline image's layers "
                + ("kept from earlier builds" if args.keep_image_cache else "built anew")
                + "; the Debian base stand-in reused (scripts/image_base.sh)"
            ],
            "tables": [
                {
                    "title": "Each step of .ci/run (minutes)",
                    "columns": ["command", "minutes", "exit"],
                    "rows": rows,
                }
            ],
        },
    )
    shutil.rmtree(clone, ignore_errors=True)
    if failed:
        raise SystemExit(f"CI failed at: {failed}")


if __name__ == "__main__":
    main()
