"""The MLflow backend against a real local registry (SQLite, in the test's folder)."""
import dataclasses
import json
import os
import subprocess
import sys

import pytest

from components.model_registry.backends import from_config, mlflow_config
from components.model_registry.version import CHAMPION, ModelVersion


def version(source: str, blessed: bool = True, accuracy: float = 0.8, run: str = "run-1"):
    return ModelVersion(name="imdb-text-encoder", source=source, blessed=blessed,
                        metrics={"binary_accuracy": accuracy, "example_count": 120.0},
                        pipeline_name="imdb-text-encoder", run_id=run,
                        pushed_version=os.path.basename(source),
                        lineage={"examples": 1, "transform_graph": 7, "model": 13})


@pytest.fixture
def registry(tmp_path):
    return from_config(mlflow_config(str(tmp_path / "mlflow"), tracking_uri=None))


def test_local_registry_is_sqlite_under_the_output_unless_a_tracking_uri_is_set(
        tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    config = json.loads(mlflow_config(str(tmp_path / "mlflow")))
    assert config["tracking_uri"] == f"sqlite:///{tmp_path}/mlflow/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    assert json.loads(mlflow_config(str(tmp_path / "mlflow")))["tracking_uri"] == (
        "http://mlflow.example:5000")


def test_two_runs_give_two_versions_and_the_alias_follows_the_blessed_one(registry, tmp_path):
    first = registry.register(version("/serving/imdb/1001", accuracy=0.8, run="run-1"))
    second = registry.register(version("/serving/imdb/1002", accuracy=0.85, run="run-2"))
    assert (first.version, second.version) == ("1", "2")
    assert second.alias == CHAMPION and second.uri == "models:/imdb-text-encoder/2"
    rows = registry.versions("imdb-text-encoder")
    assert [r["version"] for r in rows] == ["1", "2"]
    assert [r["aliases"] for r in rows] == [[], [CHAMPION]]
    shown = registry.show("imdb-text-encoder", "2")
    assert shown["source"] == "/serving/imdb/1002"
    assert shown["metrics"] == {"binary_accuracy": 0.85, "example_count": 120.0}
    assert shown["tags"]["pipeline_run_id"] == "run-2"
    assert shown["tags"]["mlmd_model_id"] == "13" and shown["tags"]["blessed"] == "true"


def test_an_unblessed_version_never_takes_the_alias(registry):
    registry.register(version("/serving/imdb/1001"))
    unblessed = registry.register(version("/serving/imdb/1002", blessed=False))
    assert unblessed.alias is None
    assert registry.by_alias("imdb-text-encoder", CHAMPION)["version"] == "1"
    with pytest.raises(ValueError, match="not blessed"):
        registry.promote("imdb-text-encoder", "2", CHAMPION)
    assert registry.promote("imdb-text-encoder", "2", CHAMPION, force=True)["aliases"] == [CHAMPION]


def test_the_same_pushed_model_is_not_registered_twice(registry):
    first = registry.register(version("/serving/imdb/1001", run="run-1"))
    again = registry.register(version("/serving/imdb/1001", run="run-2"))
    assert again.version == first.version
    assert len(registry.versions("imdb-text-encoder")) == 1


def test_concurrent_registrations_get_distinct_versions(tmp_path):
    config = mlflow_config(str(tmp_path / "mlflow"), tracking_uri=None)
    from_config(config).register(version("/serving/imdb/1000"))  # the model and experiment exist
    script = ("import sys; from components.model_registry.backends import from_config; "
              "from tests.registry.test_mlflow_registry import version; "
              "print(from_config(sys.argv[1]).register(version(sys.argv[2])).version)")
    workers = [subprocess.Popen([sys.executable, "-c", script, config, f"/serving/imdb/{1001 + i}"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for i in range(3)]
    outputs = [worker.communicate(timeout=300) for worker in workers]
    assert all(w.returncode == 0 for w in workers), [err[-2000:] for _, err in outputs]
    versions = sorted(out.strip().splitlines()[-1] for out, _ in outputs)
    assert versions == ["2", "3", "4"]
    sources = {r["version"]: r["source"] for r in from_config(config).versions()}
    assert sorted(sources.values()) == [f"/serving/imdb/{1000 + i}" for i in range(4)]


def test_the_same_saved_model_pushed_elsewhere_is_the_same_version(registry):
    first = registry.register(dataclasses.replace(version("/serving/imdb/1001"),
                                                  fingerprint="f" * 64))
    moved = registry.register(dataclasses.replace(version("/moved/serving/imdb/1001"),
                                                  fingerprint="f" * 64))
    other = registry.register(dataclasses.replace(version("/moved/serving/imdb/1002"),
                                                  fingerprint="e" * 64))
    assert (first.version, moved.version, other.version) == ("1", "1", "2")
    assert registry.show("imdb-text-encoder", "1")["tags"]["saved_model_fingerprint"] == "f" * 64
