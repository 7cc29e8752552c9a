"""A curated schema makes ExampleValidator's anomalies stop the pipeline before training."""
import io

import pytest

from components.anomalies_gate.component import DataAnomaliesError
from pipeline import configs
from pipeline.runner import build_local_pipeline, run_local
from tests.conftest import NEGATIVE, POSITIVE

pytestmark = pytest.mark.e2e
SCHEMA = str(configs.EMBEDDED_DATA_DIR / "imdb" / "schema.pbtxt")


def write_csv(directory, rating_of_first_row):
    directory.mkdir()
    for name in ("train.csv", "test.csv"):
        rows = [f'"{text}",1,{8 if i else rating_of_first_row}' for i, text in enumerate(POSITIVE)]
        rows += [f'"{text}",0,2' for text in NEGATIVE]
        (directory / name).write_text("text,label,rating\n" + "\n".join(rows * 2) + "\n", "utf-8")
    return directory


def run(data, output):
    pipeline, paths = build_local_pipeline(task="imdb", data_dir=str(data), output_dir=str(output),
                                           preset="tiny", train_steps=10, eval_steps=1,
                                           schema_path=SCHEMA)
    return run_local(pipeline, paths, stream=io.StringIO())


def test_data_within_the_schema_trains(tmp_path):
    summary = run(write_csv(tmp_path / "clean", rating_of_first_row=9), tmp_path / "out")
    assert summary["components"]["ImportSchemaGen"]["state"] == "complete"
    assert summary["components"]["Trainer"]["state"] == "complete"


def test_anomalies_stop_the_run_before_transform(tmp_path):
    expected = "feature 'rating': Out-of-range values — Unexpectedly large value: 42"
    with pytest.raises(DataAnomaliesError, match=expected):
        run(write_csv(tmp_path / "bad", rating_of_first_row=42), tmp_path / "out")
    assert not (tmp_path / "out" / "pipelines" / "imdb-transformer" / "Transform").exists()
