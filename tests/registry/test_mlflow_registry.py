"""The MLflow backend against a real local registry (SQLite, in the test's folder): each
version is an MLflow Model that MLflow's own loader answers raw input with."""

import json
import os
import subprocess
import sys

import pytest

from components.model_registry.backends import from_config, mlflow_config
from components.model_registry.version import CHAMPION, ModelVersion, saved_model_fingerprint


def version(source: str, blessed: bool = True, accuracy: float = 0.8, run: str = "run-1"):
    return ModelVersion(
        name="imdb-text-encoder",
        source=source,
        blessed=blessed,
        metrics={"binary_accuracy": accuracy, "example_count": 120.0},
        pipeline_name="imdb-text-encoder",
        run_id=run,
        pushed_version=os.path.basename(source),
        lineage={"examples": 1, "transform_graph": 7, "model": 13},
        fingerprint=saved_model_fingerprint(source),
    )


@pytest.fixture
def registry(tmp_path):
    return from_config(mlflow_config(str(tmp_path / "mlflow"), tracking_uri=None))


def test_local_registry_is_sqlite_under_the_output_unless_a_tracking_uri_is_set(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    config = json.loads(mlflow_config(str(tmp_path / "mlflow")))
    assert config["tracking_uri"] == f"sqlite:///{tmp_path}/mlflow/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.example:5000")
    assert json.loads(mlflow_config(str(tmp_path / "mlflow")))["tracking_uri"] == (
        "http://mlflow.example:5000"
    )


@pytest.mark.parametrize("named", [False, True], ids=["under-the-output", "named-sqlite-uri"])
def test_a_local_registry_writes_only_under_its_folder(tmp_path, monkeypatch, pushed, named):
    """MLflow's SQLite store would make `mlruns/` in the working directory (its models too,
    when a sqlite:// MLFLOW_TRACKING_URI names the store: a compiled job's local registry)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    uri = f"sqlite:///{tmp_path}/mlflow/mlflow.db" if named else None
    registry = from_config(
        mlflow_config(str(tmp_path / "unused" if named else tmp_path / "mlflow"), tracking_uri=uri)
    )
    registry.register(version(pushed(1)))
    assert list(elsewhere.iterdir()) == []
    (experiment,) = registry.client.search_experiments(filter_string="name = 'Default'")
    assert experiment.artifact_location.startswith(str(tmp_path / "mlflow"))


@pytest.mark.slow
def test_serve_loads_a_local_registry_s_model_without_writing_where_it_was_started(
    tmp_path, monkeypatch, pushed
):
    """`serve`'s workers load the model through the registry's SQLite store, which would make
    an empty `mlruns/` in the directory the command was started from."""
    from pipeline import configs, serve

    registry_dir = configs.output_paths(str(tmp_path / "out"), "")["registry_dir"]
    from_config(mlflow_config(registry_dir, tracking_uri=None)).register(version(pushed(1)))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    served = serve.serving(str(tmp_path / "out"))
    # What each uvicorn worker does: a fresh process, its store built there.
    worker = "from pipeline.serving_app import create_app; print(type(create_app()).__name__)"
    done = subprocess.run(
        [sys.executable, "-c", worker],
        env=served.env,
        cwd=elsewhere,
        capture_output=True,
        text=True,
    )
    assert done.stdout.split() == ["RequestLimits"], done.stderr[-2000:]
    assert list(elsewhere.iterdir()) == []


def test_two_runs_give_two_versions_and_the_alias_follows_the_blessed_one(registry, pushed):
    first = registry.register(version(pushed(1), accuracy=0.8, run="run-1"))
    second = registry.register(version(pushed(2), accuracy=0.85, run="run-2"))
    assert (first.version, second.version) == ("1", "2")
    assert second.alias == CHAMPION and second.uri == "models:/imdb-text-encoder/2"
    rows = registry.versions("imdb-text-encoder")
    assert [r["version"] for r in rows] == ["1", "2"]
    assert [r["aliases"] for r in rows] == [[], [CHAMPION]]
    shown = registry.show("imdb-text-encoder", "2")
    assert shown["saved_model"] == pushed(2)
    assert shown["source"].endswith("/artifacts/model")
    assert shown["metrics"] == {"binary_accuracy": 0.85, "example_count": 120.0}
    assert shown["tags"]["pipeline_run_id"] == "run-2"
    assert shown["tags"]["mlmd_model_id"] == "13" and shown["tags"]["blessed"] == "true"


def test_every_version_is_an_mlflow_model_that_mlflows_loader_answers_raw_text_with(
    registry, pushed, tmp_path, monkeypatch
):
    import mlflow
    import pandas as pd
    from mlflow.exceptions import MlflowException

    registry.register(version(pushed(1)))
    registry.register(version(pushed(2), run="run-2"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", registry.tracking_uri)
    model = mlflow.pyfunc.load_model("models:/imdb-text-encoder@champion")
    assert str(model.metadata.signature.inputs) == "['text': string (required)]"
    assert model.metadata.get_input_schema().input_names() == ["text"]
    answers = model.predict(pd.DataFrame({"text": ["one two three four", "one"]}))
    # the champion is the toy with bias 2: P(positive) = sigmoid(words - 3 + 2)
    assert list(answers["label"]) == ["positive", "negative"]
    assert list(answers["label_id"]) == [1, 0]
    assert answers["probabilities"][1] == pytest.approx([0.5, 0.5], abs=1e-6)
    assert answers["probabilities"][0][1] == pytest.approx(0.952574, abs=1e-5)  # sigmoid(3)
    first = mlflow.pyfunc.load_model("models:/imdb-text-encoder/1")  # bias 1
    assert first.predict(pd.DataFrame({"text": ["one two three four"]}))["probabilities"][0][
        1
    ] == pytest.approx(0.880797, abs=1e-5)  # sigmoid(2)
    with pytest.raises(MlflowException, match="row 1: the text is empty"):
        model.predict(pd.DataFrame({"text": ["fine", "  "]}))
    with pytest.raises(MlflowException, match="missing inputs \\['text'\\]"):
        model.predict(pd.DataFrame({"review": ["fine"]}))
    local = mlflow.artifacts.download_artifacts(
        registry.show("imdb-text-encoder", "2")["source"], dst_path=str(tmp_path / "downloaded")
    )
    assert {"MLmodel", "pyfunc_model.py", "input_example.json", "requirements.txt"} <= set(
        os.listdir(local)
    )
    assert os.path.exists(os.path.join(local, "artifacts", "1002", "saved_model.pb"))  # a copy
    with open(os.path.join(local, "requirements.txt")) as f:
        pinned = f.read().split()
    assert {r.split("==")[0] for r in pinned} == {
        "mlflow",
        "tensorflow",
        "tensorflow-text",
        "onnxruntime",
        "pandas",
        "numpy",
    }
    assert all("==" in r for r in pinned)


def test_a_folder_that_is_not_a_saved_model_is_refused_and_registers_nothing(registry, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(RuntimeError, match=f"cannot package the SavedModel {tmp_path}/empty"):
        registry.register(version(str(tmp_path / "empty")))
    assert registry.versions() == []


def test_an_unblessed_version_never_takes_the_alias(registry, pushed):
    registry.register(version(pushed(1)))
    unblessed = registry.register(version(pushed(2), blessed=False))
    assert unblessed.alias is None
    assert registry.by_alias("imdb-text-encoder", CHAMPION)["version"] == "1"
    with pytest.raises(ValueError, match="not blessed"):
        registry.promote("imdb-text-encoder", "2", CHAMPION)
    assert registry.promote("imdb-text-encoder", "2", CHAMPION, force=True)["aliases"] == [CHAMPION]


def test_the_same_pushed_model_is_not_registered_twice(registry, pushed):
    first = registry.register(version(pushed(1), run="run-1"))
    again = registry.register(version(pushed(1), run="run-2"))
    assert again.version == first.version
    assert len(registry.versions("imdb-text-encoder")) == 1


@pytest.mark.slow
def test_concurrent_registrations_get_distinct_versions(tmp_path, pushed):
    config = mlflow_config(str(tmp_path / "mlflow"), tracking_uri=None)
    from_config(config).register(version(pushed(0)))  # the model and experiment exist
    sources = [pushed(1 + i) for i in range(2)]
    script = (
        "import sys; from components.model_registry.backends import from_config; "
        "from tests.registry.test_mlflow_registry import version; "
        "print(from_config(sys.argv[1]).register(version(sys.argv[2])).version)"
    )
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, config, source],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for source in sources
    ]
    outputs = [worker.communicate(timeout=300) for worker in workers]
    assert all(w.returncode == 0 for w in workers), [err[-2000:] for _, err in outputs]
    versions = sorted(out.strip().splitlines()[-1] for out, _ in outputs)
    assert versions == ["2", "3"]
    saved = {r["version"]: r["saved_model"] for r in from_config(config).versions()}
    assert sorted(saved.values()) == [pushed(i) for i in range(3)]


def test_the_same_saved_model_pushed_elsewhere_is_the_same_version(registry, pushed, tmp_path):
    import shutil

    moved = shutil.copytree(pushed(1), tmp_path / "moved" / "1001")
    first = registry.register(version(pushed(1)))
    again = registry.register(version(str(moved)))
    other = registry.register(version(pushed(2)))
    assert (first.version, again.version, other.version) == ("1", "1", "2")
    assert registry.show("imdb-text-encoder", "1")["tags"]["saved_model_fingerprint"] == (
        saved_model_fingerprint(pushed(1))
    )


def test_a_registration_that_dies_while_logging_the_model_leaves_no_version(
    registry, pushed, monkeypatch
):
    """A crash part-way through the copy into the run (here: after the MLmodel file) leaves a
    FAILED run and no version; registering again creates exactly one, complete, version."""
    import mlflow

    log_artifacts = registry.client.log_artifacts

    def dies_part_way(run_id, local_dir, artifact_path=None):
        registry.client.log_artifact(run_id, os.path.join(local_dir, "MLmodel"), artifact_path)
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(registry.client, "log_artifacts", dies_part_way)
    with pytest.raises(KeyboardInterrupt):
        registry.register(version(pushed(1)))
    assert registry.versions() == []
    (failed,) = registry.client.search_runs([registry._experiment_id("imdb-text-encoder")])
    assert failed.info.status == "FAILED"

    monkeypatch.setattr(registry.client, "log_artifacts", log_artifacts)
    registered = registry.register(version(pushed(1), run="run-2"))
    assert registered.version == "1" and len(registry.versions()) == 1
    monkeypatch.setenv("MLFLOW_TRACKING_URI", registry.tracking_uri)
    assert mlflow.pyfunc.load_model("models:/imdb-text-encoder@champion").metadata.signature


@pytest.mark.slow
def test_two_concurrent_promotes_both_succeed_and_leave_one_champion(tmp_path, pushed):
    from pipeline import configs

    output = tmp_path / "out"
    registry = from_config(
        mlflow_config(configs.output_paths(str(output), "")["registry_dir"], tracking_uri=None)
    )
    for n in (1, 2, 3):
        registry.register(version(pushed(n), run=f"run-{n}"))  # 3 is the champion
    promotes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pipeline.cli",
                "registry",
                "--output",
                str(output),
                "promote",
                "imdb-text-encoder",
                v,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for v in ("1", "2")
    ]
    outputs = [p.communicate(timeout=120) for p in promotes]
    assert [p.returncode for p in promotes] == [0, 0], [err[-2000:] for _, err in outputs]
    aliases = {r["version"]: r["aliases"] for r in registry.versions()}
    assert sorted(sum(aliases.values(), [])) == [CHAMPION]  # exactly one champion
    assert aliases["3"] == []  # and it is one of the two promoted versions


def test_an_alias_written_by_another_registration_at_the_same_moment_is_read_again(
    registry, pushed, monkeypatch
):
    """On a tracking server's database, two registrations crowning at once both insert the
    alias row; the second insert breaks the key, and MLflow answers 400 (BAD_REQUEST) with the
    IntegrityError. That registration reads the alias again instead of failing."""
    from mlflow.exceptions import MlflowException

    first = registry.register(version(pushed(1)))
    set_alias = registry.client.set_registered_model_alias
    raced = []

    def as_if_raced(name, alias, number):
        if not raced:  # the other registration's write lands first, then ours is refused
            raced.append(number)
            set_alias(name, alias, number)
            raise MlflowException(
                "(psycopg2.errors.UniqueViolation) duplicate key value violates unique "
                'constraint "registered_model_alias_pk" (Background on this error at: '
                "https://sqlalche.me/e/20/gkpj)",
                error_code="BAD_REQUEST",
            )
        set_alias(name, alias, number)

    monkeypatch.setattr(registry.client, "set_registered_model_alias", as_if_raced)
    second = registry.register(version(pushed(2)))
    assert raced == [second.version] and first.version != second.version
    assert (second.alias, registry.by_alias(second.name, CHAMPION)["version"]) == (
        CHAMPION,
        second.version,
    )
    # Any other refusal still fails the registration.
    monkeypatch.setattr(
        registry.client,
        "set_registered_model_alias",
        lambda *a: (_ for _ in ()).throw(MlflowException("no such version", "BAD_REQUEST")),
    )
    with pytest.raises(MlflowException, match="no such version"):
        registry.register(version(pushed(3)))


def test_a_version_number_taken_by_another_registration_at_the_same_moment_is_asked_again(
    registry, pushed, monkeypatch
):
    """MLflow's store numbers a new version max + 1; two registrations at once on a server's
    database break the key, and the loser gets 400 with the IntegrityError: it asks again."""
    from mlflow.exceptions import MlflowException

    create = registry.client.create_model_version
    refused = []

    def as_if_raced(*args, **kwargs):
        if not refused:
            refused.append(1)
            raise MlflowException(
                "(psycopg2.errors.UniqueViolation) duplicate key value violates unique "
                'constraint "model_version_pk" (Background on this error at: '
                "https://sqlalche.me/e/20/gkpj)",
                error_code="BAD_REQUEST",
            )
        return create(*args, **kwargs)

    monkeypatch.setattr(registry.client, "create_model_version", as_if_raced)
    registered = registry.register(version(pushed(1)))
    assert refused == [1] and registered.version == "1"
    assert [row["version"] for row in registry.versions()] == ["1"]
