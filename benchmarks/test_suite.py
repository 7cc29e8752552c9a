"""Benchmark: how long the test tiers take, as CI runs them (the budget: `make test` within
8 minutes on every 2-core machine kind, the slowest included).

    .venv/bin/python -m benchmarks.test_suite [--tiers test test-slow] [--name NAME]

Runs each `make` target in this checkout (run it in a fresh clone, after `make setup` and
`make image`, with nothing else on the machine), timing it and reading pytest's summary line
(passed, skipped, failed). Before and after each tier it times a fixed workload (Python
bytecode and a float32 matmul), so that a run on a machine running slower than usual shows it:
the same suite's minutes move with these seconds, and only runs at the same speed compare. Writes
benchmarks/results/test_suite/<name>.json; exits non-zero when a tier fails.
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

from benchmarks import report

BUDGET_MINUTES = 8.0  # `make test` on every machine kind (CONTRIBUTING.md)
FILES = 20  # the test files with the most busy time, kept in the results


def summary(output: str) -> dict:
    """pytest's final counts: `422 passed, 3 skipped in 561.2s` -> {passed: 422, skipped: 3}."""
    lines = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    if not lines:
        return {}
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", lines[-1]) if word != "in"}


# A fixed amount of work, timed in a fresh interpreter (best of three): the Python half stands
# for the suite's tracing and Beam graph building, the matmul for its training steps.
CALIBRATION = r"""
import json, time
import numpy as np
a = np.random.default_rng(0).standard_normal((512, 512), dtype=np.float32)
best = {"python": float("inf"), "matmul": float("inf")}
for _ in range(3):
    started = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i % 7
    best["python"] = min(best["python"], time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(100):
        a @ a
    best["matmul"] = min(best["matmul"], time.perf_counter() - started)
print(json.dumps({k: round(v, 3) for k, v in best.items()}))
"""


def machine_speed() -> dict:
    """Seconds of CALIBRATION's two workloads on this machine now: {python, matmul}."""
    output = subprocess.run(
        [sys.executable, "-c", CALIBRATION], capture_output=True, text=True, check=True
    )
    return json.loads(output.stdout)


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_tier(target: str) -> dict:
    timings = os.path.join(tempfile.mkdtemp(), "timings.json")  # written by tests/conftest.py
    env = {**os.environ, "TEST_TIMINGS": timings}
    if target == "test":
        env["REQUIRE_BROWSER"] = "1"
    if target == "test-slow":  # its launches run in the image, as CI runs them (make image)
        env["REQUIRE_IMAGE"] = "1"
    before = machine_speed()
    print(f"make {target} ... (calibration seconds before: {before})", flush=True)
    started, used = time.perf_counter(), children_cpu_seconds()
    process = subprocess.run(
        ["make", target], cwd=report.REPO, env=env, capture_output=True, text=True
    )
    minutes = (time.perf_counter() - started) / 60
    cpu_minutes = (children_cpu_seconds() - used) / 60
    after = machine_speed()
    counts = summary(process.stdout + process.stderr)
    slowest = re.findall(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)", process.stdout, re.M)
    busy: dict[str, dict] = {"workers": {}, "files": {}}
    if os.path.exists(timings):
        with open(timings) as f:
            busy = json.load(f)
    workers = {w: round(s / 60, 2) for w, s in sorted(busy["workers"].items())}
    print(
        f"make {target}: {counts} in {minutes:.2f} min, {cpu_minutes:.2f} CPU min "
        f"(exit {process.returncode})"
    )
    print(f"  busy minutes per worker: {workers}; calibration seconds after: {after}")
    if process.returncode:
        print((process.stdout + process.stderr)[-4000:])
    return {
        "minutes": round(minutes, 2),
        # user + system time of make and every process it waited for (pytest, its workers, the
        # servers and subprocesses the tests start): the work, apart from how it was scheduled
        "cpu_minutes": round(cpu_minutes, 2),
        "exit": process.returncode,
        **counts,
        # pytest's --durations (pyproject.toml): the slowest phases, "12.3s setup test_id"
        "slowest": [f"{float(t):.1f}s {phase} {test}" for t, phase, test in slowest],
        # the sums of the tests' setup, call and teardown times
        "worker_busy_minutes": workers,
        "calibration_seconds": {"before": before, "after": after},
        "file_seconds": {
            path: round(seconds, 1)
            for path, seconds in sorted(busy["files"].items(), key=lambda kv: -kv[1])[:FILES]
        },
    }


def slowest_table(tiers: dict) -> dict:
    """The results' table of each tier's slowest tests (pytest --durations)."""
    rows = []
    for target, tier in tiers.items():
        for line in tier.get("slowest", []):
            seconds, phase, test = line.split(" ", 2)
            rows.append([f"make {target}", test, phase, seconds.rstrip("s")])
    return {"title": "Slowest tests", "columns": ["tier", "test", "phase", "seconds"], "rows": rows}


def files_table(tiers: dict) -> dict:
    """Each tier's test files by busy time, and each xdist worker's (the critical path)."""
    rows = []
    for target, tier in tiers.items():
        for worker, minutes in tier.get("worker_busy_minutes", {}).items():
            rows.append([f"make {target}", f"worker {worker}", round(minutes * 60, 1)])
        for path, seconds in tier.get("file_seconds", {}).items():
            rows.append([f"make {target}", path, seconds])
    return {
        "title": "Busy time by worker and by file",
        "columns": ["tier", "of", "seconds"],
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", nargs="+", default=["test", "test-slow"])
    parser.add_argument("--name", default="make-test")
    args = parser.parse_args()
    tiers = {target: run_tier(target) for target in args.tiers}
    measured = {}
    for target, tier in tiers.items():
        label = "default tier" if target == "test" else "slow tier"
        measured[f"{label}, tests"] = tier.get("passed", 0)
        measured[f"{label}, minutes"] = tier["minutes"]
        measured[f"{label}, CPU minutes"] = tier["cpu_minutes"]
        for when, speed in tier["calibration_seconds"].items():
            for workload, seconds in speed.items():
                measured[f"{label}, calibration {workload} {when}, seconds"] = seconds
    references = []
    if "test" in tiers:
        references.append(("make test, minutes", "default tier, minutes", BUDGET_MINUTES, "budget"))
    report.print_comparison(measured, references)
    report.save(
        "test_suite",
        args.name,
        {
            "title": "The test suite, " + ", ".join(f"`make {t}`" for t in tiers),
            "measured": measured,
            "tiers": tiers,
            "tables": [slowest_table(tiers), files_table(tiers)],
            "notes": [
                "`make test` runs with REQUIRE_BROWSER=1, as CI does: the run report's "
                "browser test runs rather than skips."
            ],
        },
        references,
    )
    return max(tier["exit"] for tier in tiers.values())


if __name__ == "__main__":
    sys.exit(main())
