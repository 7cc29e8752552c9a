"""benchmarks/report.py writes the results files the docs are built from."""

import json
import sys

from benchmarks import report


def test_a_results_file_gets_a_title_from_its_benchmark_when_it_gives_none(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "RESULTS_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "argv", [report.__file__, "--name", "small-run"])
    monkeypatch.setattr(sys.modules["__main__"], "__doc__", "Benchmark: the whole thing.\n\nMore.")
    untitled = json.load(open(report.save("demo", "small-run", {"measured": {"accuracy": 0.5}})))
    assert untitled["title"] == "The whole thing: small run"
    titled = json.load(open(report.save("demo", "other", {"title": "A chosen title"})))
    assert titled["title"] == "A chosen title" and titled["benchmark"] == "demo"
