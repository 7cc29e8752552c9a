"""The registry over HTTP, against a real `mlflow server` (SQLite backend store, artifacts
proxied by the server into a folder of its own): registering, the `registry` and `serve`
commands, MLflow's loader, and a server that is down, restarting or killed mid-upload."""

import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from components.model_registry.backends import from_config, mlflow_config
from components.model_registry.mlflow_registry import RETRY_ENV, RegistryUnavailable
from components.model_registry.version import CHAMPION
from tests.ports import free_port
from tests.registry.test_mlflow_registry import version
from tests.tracking_server import TrackingServer

NAME = "imdb-text-encoder"


@pytest.fixture
def server(tmp_path):
    server = TrackingServer(f"sqlite:///{tmp_path}/server/mlflow.db", str(tmp_path / "server/art"))
    yield server.start()
    server.stop()


@pytest.fixture
def fast_failures(monkeypatch):
    """MLflow's own retries of one request off, and the registration's budget a few seconds."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv(RETRY_ENV, "3")


def cli(*args, env: dict, cwd: str) -> list:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=cwd,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def files_under(folder) -> set:
    return {name for _, _, names in os.walk(folder) for name in names}


@pytest.mark.slow
def test_versions_go_through_the_server_and_the_registry_commands_loader_and_serve_use_it(
    server, pushed, tmp_path, monkeypatch
):
    import mlflow
    import pandas as pd

    client_dir = tmp_path / "client"
    registry = from_config(mlflow_config(str(client_dir / "mlflow"), tracking_uri=server.url))
    first = registry.register(version(pushed(1), run="run-1"))
    second = registry.register(version(pushed(2), run="run-2", accuracy=0.85))
    assert (first.version, second.version, second.alias) == ("1", "2", CHAMPION)
    # The artifacts went through the server into its own folder; the client wrote nothing.
    assert registry.show(NAME, "2")["source"].startswith("mlflow-artifacts:/")
    assert not client_dir.exists()
    assert {"MLmodel", "saved_model.pb", "pyfunc_model.py"} <= files_under(server.artifacts)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"MLFLOW_TRACKING_URI": server.url}
    rows = cli("registry", "list", env=env, cwd=str(elsewhere))
    assert [(r["version"], r["aliases"]) for r in rows] == [("1", []), ("2", [CHAMPION])]
    assert rows[1]["metrics"]["binary_accuracy"] == 0.85
    (promoted,) = cli("registry", "promote", NAME, "1", env=env, cwd=str(elsewhere))
    assert promoted["aliases"] == [CHAMPION]
    (shown,) = cli("registry", "show", NAME, "--alias", CHAMPION, env=env, cwd=str(elsewhere))
    assert shown["version"] == "1" and shown["tags"]["pipeline_run_id"] == "run-1"

    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)
    monkeypatch.chdir(elsewhere)
    model = mlflow.pyfunc.load_model(f"models:/{NAME}@{CHAMPION}")
    answers = model.predict(pd.DataFrame({"text": ["one two three four"]}))
    assert answers["probabilities"][0][1] == pytest.approx(0.880797, abs=1e-5)  # bias 1

    port = free_port()
    serving = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "serve", "--name", NAME, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **env},
        cwd=str(elsewhere),
        start_new_session=True,
    )
    try:
        described = json.loads(serving.stdout.readline())
        assert described["tracking_uri"] == server.url and described["version"] == "1"
        answer = post_when_up(port, {"inputs": {"text": ["one two three four"]}})
        assert answer["predictions"][0]["probabilities"][1] == pytest.approx(0.880797, abs=1e-5)
    finally:
        os.killpg(serving.pid, 15)
        serving.wait(timeout=60)


def post_when_up(port: int, body: dict, timeout: float = 240) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/invocations",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return json.loads(answer.read())
        except OSError:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.5)


def test_a_server_that_stays_down_fails_the_registration_with_its_address(fast_failures, tmp_path):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens
    started = time.monotonic()
    with pytest.raises(RegistryUnavailable, match=f"the MLflow tracking server {url} did not"):
        from_config(mlflow_config(str(tmp_path / "mlflow"), tracking_uri=url))
    assert time.monotonic() - started < 60  # bounded: 3 s of retries, not MLflow's 4 minutes


@pytest.mark.slow  # a server restarted mid-registration: about 20 s
def test_a_registration_waits_for_a_restarting_server_then_registers(server, pushed, tmp_path):
    """The server is down when the registration starts; it comes back after the registration
    has retried once; the registration then completes."""
    pushed(1)
    server.stop()
    script = (
        "import sys; from components.model_registry.backends import from_config, mlflow_config; "
        "from tests.registry.test_mlflow_registry import version; "
        "r = from_config(mlflow_config(sys.argv[1], tracking_uri=sys.argv[2])); "
        "print(r.register(version(sys.argv[3])).version)"
    )
    registering = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "mlflow"), server.url, pushed(1)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, RETRY_ENV: "300", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"},
    )
    for line in registering.stderr:  # waits for the first retry
        if f"MLflow tracking server {server.url} did not answer (attempt 1)" in line:
            break
    else:
        pytest.fail(f"the registration ended without retrying: {registering.wait()}")
    server.start()
    out, err = registering.communicate(timeout=300)
    assert registering.returncode == 0, err[-3000:]
    assert out.split()[-1] == "1"
    assert (
        from_config(mlflow_config("", tracking_uri=server.url)).by_alias(NAME, CHAMPION)["version"]
        == "1"
    )


@pytest.mark.slow
def test_a_server_killed_mid_upload_leaves_no_version_and_the_next_registration_completes(
    server, pushed, tmp_path, monkeypatch, fast_failures
):
    import mlflow
    import pandas as pd
    from mlflow.store.artifact.http_artifact_repo import HttpArtifactRepository

    uploaded = []
    upload = HttpArtifactRepository.log_artifact

    def killed_after_the_first_file(repository, local_file, artifact_path=None):
        if uploaded:  # the second file: the server dies before it arrives
            server.stop()
        upload(repository, local_file, artifact_path)
        uploaded.append(os.path.basename(local_file))

    monkeypatch.setattr(HttpArtifactRepository, "log_artifact", killed_after_the_first_file)
    registry = from_config(mlflow_config(str(tmp_path / "mlflow"), tracking_uri=server.url))
    with pytest.raises(RegistryUnavailable, match=server.url):
        registry.register(version(pushed(1)))
    assert len(uploaded) == 1  # the kill landed mid-upload

    monkeypatch.undo()
    monkeypatch.setenv(RETRY_ENV, "60")
    server.start()
    registry = from_config(mlflow_config(str(tmp_path / "mlflow"), tracking_uri=server.url))
    assert registry.versions() == []  # nothing points at the partial upload
    assert registry.register(version(pushed(1), run="run-2")).version == "1"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)
    model = mlflow.pyfunc.load_model(f"models:/{NAME}@{CHAMPION}")
    assert model.predict(pd.DataFrame({"text": ["one"]}))["label"][0] == "negative"


@pytest.mark.slow
def test_registry_copy_moves_a_local_registry_to_the_server_once(
    server, pushed, tmp_path, monkeypatch
):
    """A team moving from the SQLite registry under outputs/ to its server: every version, with
    its metrics, tags and aliases; a second copy registers nothing new."""
    import mlflow
    import pandas as pd

    from pipeline import configs

    output = tmp_path / "out"
    local = from_config(
        mlflow_config(configs.output_paths(str(output), "")["registry_dir"], tracking_uri=None)
    )
    local.register(version(pushed(1), run="run-1", accuracy=0.8))
    local.register(version(pushed(2), run="run-2", accuracy=0.85))
    local.promote(NAME, "1", "stable")
    env = {"MLFLOW_TRACKING_URI": ""}
    copied = cli("registry", "--output", output, "copy", "--to", server.url, env=env, cwd=".")
    assert [(r["version"], r["aliases"]) for r in copied] == [("1", ["stable"]), ("2", [CHAMPION])]
    for row, original in zip(copied, local.versions(NAME)):
        assert row["metrics"] == original["metrics"]
        assert row["tags"] == original["tags"]
        assert row["source"].startswith("mlflow-artifacts:/")
    again = cli("registry", "--output", output, "copy", "--to", server.url, env=env, cwd=".")
    assert [r["version"] for r in again] == ["1", "2"]
    assert len(from_config(mlflow_config("", tracking_uri=server.url)).versions()) == 2
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)
    model = mlflow.pyfunc.load_model(f"models:/{NAME}@{CHAMPION}")
    answers = model.predict(pd.DataFrame({"text": ["one two three four"]}))
    assert answers["probabilities"][0][1] == pytest.approx(0.952574, abs=1e-5)  # bias 2
