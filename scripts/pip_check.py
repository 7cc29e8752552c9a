"""`pip check`, less the conflicts requirements/overrides.txt causes on purpose.

The lock overrides protobuf (TFX 1.16's libraries need 4.x; newer Google clients ask for 5 or
6) and pins three packages generated for protobuf 4; `pip check` reports every package whose
declared range these overrides leave. Those lines are expected; any other conflict is a broken
environment, and fails: the pipeline image's build runs this (kubeflow/Dockerfile).

Usage: python scripts/pip_check.py [OVERRIDES_FILE]
"""

import pathlib
import re
import subprocess
import sys

OVERRIDES = pathlib.Path(__file__).resolve().parents[1] / "requirements" / "overrides.txt"
# Conflicts known and harmless, with why: the lock is resolved for Python 3.10 markers (TFX
# 1.16 declares <3.11; scripts/lock.sh), where Beam asks for envoy-data-plane 0.x; on 3.11 it
# asks for 1.x, which only its Envoy rate limiter (apache_beam.io.components) imports.
KNOWN = {"envoy-data-plane"}
CONFLICT = re.compile(r"^(?P<package>\S+) \S+ has requirement (?P<needs>\S+?)[<>=!~;, ].*")


def overridden(path=OVERRIDES) -> set:
    names = set()
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(re.split(r"[<>=!~ \[]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def unexpected(report: str, allowed: set) -> list:
    """The lines of `pip check`'s `report` that no override explains."""
    lines = []
    for line in report.splitlines():
        if not line.strip() or line.startswith(("WARNING", "No broken requirements")):
            continue
        match = CONFLICT.match(line)
        needs = match["needs"].lower().replace("_", "-") if match else None
        if needs not in allowed:
            lines.append(line)
    return lines


def main(argv) -> int:
    allowed = overridden(argv[0] if argv else OVERRIDES) | KNOWN
    report = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True
    ).stdout
    bad = unexpected(report, allowed)
    expected = len([line for line in report.splitlines() if "has requirement" in line]) - len(bad)
    print(f"pip check: {expected} expected conflicts, of {', '.join(sorted(allowed))}")
    for line in bad:
        print(f"unexpected: {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
