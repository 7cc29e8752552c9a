"""A curated schema makes ExampleValidator's anomalies stop the pipeline before training (data
within the schema trains: the session's IMDB run uses the same schema)."""

import pytest

from tests.conftest import NEGATIVE, POSITIVE
from tests.e2e.cli_util import run_cli
from tests.e2e.conftest import SCHEMA

pytestmark = pytest.mark.e2e


def write_csv(directory, rating_of_first_row):
    directory.mkdir()
    for name in ("train.csv", "test.csv"):
        rows = [f'"{text}",1,{8 if i else rating_of_first_row}' for i, text in enumerate(POSITIVE)]
        rows += [f'"{text}",0,2' for text in NEGATIVE]
        (directory / name).write_text("text,label,rating\n" + "\n".join(rows * 2) + "\n", "utf-8")
    return directory


def test_data_within_the_schema_was_trained_by_the_session_run(imdb_run):
    assert imdb_run.summary["components"]["ImportSchemaGen"]["state"] == "complete"
    assert imdb_run.summary["components"]["Trainer"]["state"] == "complete"


@pytest.mark.slow  # a run of its own (tests/components/test_anomalies_gate.py: the gate)
def test_anomalies_stop_the_run_before_transform(tmp_path):
    result = run_cli(
        "run",
        "--task",
        "imdb",
        "--data",
        write_csv(tmp_path / "bad", 42),
        "--output",
        tmp_path / "out",
        "--preset",
        "tiny",
        "--schema",
        SCHEMA,
        "--registry",
        "none",
        check=False,
    )
    assert result.code == 1
    (summary,) = result.lines
    assert summary["status"] == "failed"
    assert (
        "feature 'rating': Out-of-range values — Unexpectedly large value: 42" in summary["error"]
    )
    pipeline_root = tmp_path / "out" / "pipelines" / summary["pipeline_name"]
    assert (
        summary["pipeline_name"] == "bad-text-encoder"
        and (pipeline_root / "ReviewsExampleGen").exists()
    )
    assert not (pipeline_root / "Transform").exists()
