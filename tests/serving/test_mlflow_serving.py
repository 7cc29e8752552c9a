"""Each task's trained export, registered as MLflow Models: MLflow's own loader answers raw input
with the champion, and `tfx-transformers serve` (MLflow's scoring server) answers real HTTP
requests as the SavedModel does, refusing bad requests with a 400 and a message."""

import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from components.model_registry.backends import from_config, mlflow_config
from components.model_registry.version import ModelVersion, saved_model_fingerprint
from pipeline import configs
from tests.conftest import PAIRS, picture
from tests.image_util import encode
from tests.ports import free_port
from trainer_module.serving import runtimes

TEXTS = ["great fun", "boring mess"]
SOURCES = [PAIRS[3][0], PAIRS[0][0]]


@pytest.fixture(scope="module")
def registered(tmp_path_factory, text_encoder_run, translator_run, vit_run):
    """An output directory whose registry holds each task's export as its pipeline's champion."""
    output = tmp_path_factory.mktemp("served")
    registry = from_config(
        mlflow_config(configs.output_paths(str(output), "")["registry_dir"], tracking_uri=None)
    )
    exports = {
        "imdb-text-encoder": text_encoder_run.export_dir,
        "translation-translator": translator_run.export_dir,
        "cifar10-vit": vit_run.export_dir,
    }
    for name, export in exports.items():
        registry.register(
            ModelVersion(
                name=name,
                source=export,
                blessed=True,
                metrics={},
                pipeline_name=name,
                run_id="run-1",
                pushed_version="1",
                lineage={},
                fingerprint=saved_model_fingerprint(export),
            )
        )
    return str(output), registry.tracking_uri, exports


def images():
    return [encode(picture("red", 16, 1)), encode(picture("blue", 24, 2), "JPEG")]


def direct(export: str, values: list, runtime: str = runtimes.AUTO) -> dict:
    """The export's answers through `runtime` (the one serving chooses, by default), called
    here: what MLflow's loader and the server must answer."""
    outputs = runtimes.Served(tf.saved_model.load(export), export, runtime)(values)
    names = [n.decode() if isinstance(n, bytes) else n for n in outputs["label_name"]]
    return {**outputs, "label_name": names}


def test_the_champion_of_every_task_loads_with_mlflow_pyfunc_and_answers_raw_input(
    registered, monkeypatch
):
    import mlflow

    output, tracking_uri, exports = registered
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tracking_uri)

    text = mlflow.pyfunc.load_model("models:/imdb-text-encoder@champion")
    answers = text.predict(pd.DataFrame({"text": TEXTS}))
    expected = direct(exports["imdb-text-encoder"], TEXTS)
    np.testing.assert_allclose(
        np.stack(answers["probabilities"]), expected["probabilities"], rtol=1e-5, atol=1e-6
    )
    assert list(answers["label"]) == expected["label_name"]
    # ONNX Runtime answers (the tiny model's fastest runtime), with the SavedModel's labels.
    assert text.unwrap_python_model().served.runtime in (runtimes.ONNX_FLOAT32, runtimes.ONNX_INT8)
    saved_model = direct(exports["imdb-text-encoder"], TEXTS, runtimes.SAVED_MODEL)
    assert saved_model["label_name"] == expected["label_name"]

    translator = mlflow.pyfunc.load_model("models:/translation-translator@champion")
    assert list(translator.predict(pd.DataFrame({"source": SOURCES}))["translation"]) == [
        "A child is laughing.",
        "A man is running.",
    ]

    vit = mlflow.pyfunc.load_model("models:/cifar10-vit@champion")
    as_bytes = vit.predict(pd.DataFrame({"image": images()}))
    as_base64 = vit.predict(
        pd.DataFrame({"image": [base64.b64encode(i).decode() for i in images()]})
    )
    assert list(as_bytes["label"]) == list(as_base64["label"]) == ["red", "blue"]
    assert str(vit.metadata.signature.inputs) == "['image': binary (required)]"


def post(port: int, body: bytes):
    """(status, JSON answer) of POST /invocations."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/invocations",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def columns(name: str, values) -> bytes:
    return json.dumps(
        {"dataframe_split": {"columns": [name], "data": [[v] for v in values]}}
    ).encode()


# The IMDB server runs with small limits (a request of at most 0.2 MiB and 2 rows), the
# translator's with one TensorFlow thread per op, the others with the defaults.
OPTIONS = {
    "imdb-text-encoder": ["--max-request-mb", "0.2", "--max-rows", "2"],
    "translation-translator": ["--threads-per-op", "1"],
}


@pytest.fixture(scope="module")
def servers(registered):
    """`tfx-transformers serve` for each task's champion, started together (the image model's
    from its SavedModel folder, not the registry); {name: port} and what each printed when it
    started."""
    output, _, exports = registered
    started = {}
    for name in ("imdb-text-encoder", "translation-translator", "cifar10-vit"):
        port = free_port()
        which = [exports[name]] if name == "cifar10-vit" else ["--name", name]
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pipeline.cli",
                "serve",
                "--output",
                output,
                *which,
                "--port",
                str(port),
                *OPTIONS.get(name, []),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )  # uvicorn may start workers: stop the group
        started[name] = port, process
    described = {}
    try:
        for key, (port, process) in started.items():
            described[key] = json.loads(process.stdout.readline())
            if key == "cifar10-vit":  # the folder, packaged as the registry would hold it
                packaged = described[key]["model_uri"]
                assert os.path.isfile(os.path.join(packaged, "MLmodel"))
                assert described[key]["tracking_uri"] is None
            else:
                assert described[key]["model_uri"] == f"models:/{key}@champion"
            assert described[key]["url"] == f"http://127.0.0.1:{port}/invocations"
            expected_runtime = runtimes.choose(runtimes.read_manifest(exports[key]))
            assert described[key]["runtime"] == expected_runtime
            deadline = time.time() + 240
            while True:
                assert process.poll() is None, f"the server of {key} exited"
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=5)
                    break
                except OSError:
                    assert time.time() < deadline, f"the server of {key} did not start"
                    time.sleep(0.5)
        servers = {key: port for key, (port, _) in started.items()}
        servers["described"] = described
        yield servers
    finally:
        for _, process in started.values():
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)


def test_serve_answers_http_requests_for_every_task_as_the_saved_model_does(registered, servers):
    _, _, exports = registered
    status, answer = post(servers["imdb-text-encoder"], columns("text", TEXTS))
    assert status == 200
    expected = direct(exports["imdb-text-encoder"], TEXTS)
    np.testing.assert_allclose(
        [p["probabilities"] for p in answer["predictions"]],
        expected["probabilities"],
        rtol=1e-5,
        atol=1e-6,
    )
    assert [p["label"] for p in answer["predictions"]] == expected["label_name"]
    assert [p["classes"] for p in answer["predictions"]] == [["negative", "positive"]] * len(TEXTS)

    status, answer = post(
        servers["translation-translator"], json.dumps({"inputs": {"source": SOURCES}}).encode()
    )
    assert (status, answer) == (
        200,
        {
            "predictions": [
                {"translation": "A child is laughing."},
                {"translation": "A man is running."},
            ]
        },
    )

    encoded = [base64.b64encode(i).decode() for i in images()]
    status, answer = post(servers["cifar10-vit"], columns("image", encoded))
    assert status == 200
    expected = direct(exports["cifar10-vit"], images())
    assert [p["label"] for p in answer["predictions"]] == ["red", "blue"]
    assert [p["classes"] for p in answer["predictions"]] == [
        [n.decode() if isinstance(n, bytes) else n for n in expected["classes"][0]]
    ] * 2
    assert {"red", "blue"} <= set(answer["predictions"][0]["classes"])
    np.testing.assert_allclose(
        [p["probabilities"] for p in answer["predictions"]],
        expected["probabilities"],
        rtol=1e-5,
        atol=1e-6,
    )


def test_plain_json_requests_are_answered_directly_as_mlflow_s_app_answers_them(servers):
    """The four forms of a request holding the input column alone are answered by the model's
    `answers` (pipeline/serving_app.py); with a `dataframe_split` index MLflow's own app
    answers. Each answer is the same."""
    port = servers["imdb-text-encoder"]
    through_mlflow = {"dataframe_split": {"columns": ["text"], "data": [[t] for t in TEXTS]}}
    through_mlflow["dataframe_split"]["index"] = [0, 1]
    status, expected = post(port, json.dumps(through_mlflow).encode())
    assert status == 200 and len(expected["predictions"]) == 2
    direct_forms = [
        columns("text", TEXTS),
        json.dumps({"dataframe_records": [{"text": t} for t in TEXTS]}).encode(),
        json.dumps({"instances": [{"text": t} for t in TEXTS]}).encode(),
        json.dumps({"inputs": {"text": TEXTS}}).encode(),
    ]
    for body in direct_forms:
        assert post(port, body) == (200, expected), body
    # Over the row limit (2 on this server): refused as before, by the model's check.
    status, answer = post(port, columns("text", TEXTS + TEXTS[:1]))
    assert status == 400 and "at most 2 are accepted" in answer["message"]


def test_a_served_folder_is_packaged_once_and_a_folder_that_is_no_model_is_refused(
    registered, tmp_path
):
    from pipeline.serve import packaged_folder

    _, _, exports = registered
    export = exports["cifar10-vit"]
    packaged, served = packaged_folder(export)
    assert served == export
    written = os.stat(os.path.join(packaged, "MLmodel")).st_mtime_ns
    assert packaged_folder(export) == (packaged, export)  # reused, not written again
    assert os.stat(os.path.join(packaged, "MLmodel")).st_mtime_ns == written
    assert packaged_folder(packaged) == (packaged, packaged)  # an MLflow Model serves as it is
    versions = tmp_path / "versions"  # a folder of numbered versions: its newest
    versions.mkdir()
    os.symlink(export, versions / "7")
    os.symlink(tmp_path, versions / "9")  # no SavedModel in it: not a version
    assert packaged_folder(str(versions))[1] == str(versions / "7")
    with pytest.raises(FileNotFoundError, match="not a model folder"):
        packaged_folder(str(tmp_path / "versions" / "9"))


@pytest.mark.parametrize(
    "server, body, message",
    [
        ("imdb-text-encoder", b"", "Invalid input"),
        ("imdb-text-encoder", b'{"dataframe_split": {"secret', "Invalid input"),
        ("imdb-text-encoder", columns("review", ["secret"]), "Model is missing inputs ['text']"),
        (
            "imdb-text-encoder",
            columns("text", ["x" * 100_001]),
            "row 0: the text has 100,001 characters; at most 100,000 are accepted",
        ),
        ("imdb-text-encoder", columns("text", ["secret", ""]), "row 1: the text is empty"),
        ("imdb-text-encoder", b'{"inputs": {"text": [null]}}', "row 0: expected a string, got"),
        ("imdb-text-encoder", b'{"inputs": {"text": [12345]}}', "row 0: expected a string, got"),
        ("imdb-text-encoder", b'{"inputs": {"text": ["caf\xe9"]}}', "is not UTF-8"),
        ("imdb-text-encoder", b"[" * 90_000 + b"]" * 90_000, "nested too deeply"),
        ("translation-translator", columns("source", [" "]), "row 0: the text is empty"),
        (
            "cifar10-vit",
            columns("image", [base64.b64encode(b"GIF89a not an image").decode()]),
            "row 0: not a JPEG or PNG image",
        ),
    ],
    ids=[
        "empty body",
        "broken JSON",
        "missing field",
        "a text over the limit",
        "empty string",
        "null",
        "a number",
        "not UTF-8",
        "deep JSON",
        "blank source",
        "not an image",
    ],
)
def test_a_bad_request_gets_a_400_with_a_message_and_the_server_keeps_answering(
    servers, server, body, message
):
    status, answer = post(servers[server], body)
    assert status == 400
    assert message in answer["message"]
    # The answer does not echo the request, nor carry the server's traceback.
    assert "secret" not in json.dumps(answer) and "xxxxxxxxxx" not in json.dumps(answer)
    assert "stack_trace" not in answer and len(answer["message"]) < 600
    valid = {
        "imdb-text-encoder": columns("text", TEXTS),
        "translation-translator": columns("source", SOURCES),
        "cifar10-vit": columns("image", [base64.b64encode(images()[0]).decode()]),
    }
    assert post(servers[server], valid[server])[0] == 200


def test_the_limits_are_stated_and_enforced_and_the_server_keeps_answering(servers):
    port = servers["imdb-text-encoder"]
    assert servers["described"]["imdb-text-encoder"]["limits"] == {
        "max_request_bytes": 209715,
        "max_rows": 2,
        "timeout_seconds": 60,
    }
    assert servers["described"]["translation-translator"]["limits"] == {
        "max_request_bytes": 32 * 1024 * 1024,
        "max_rows": 1000,
        "timeout_seconds": 60,
    }
    # The translator's workers run one TensorFlow thread per op (TF_NUM_INTRAOP_THREADS) and
    # answer as the SavedModel does (test_serve_answers_http_requests_...); the others, one
    # per core.
    threads = {key: servers["described"][key]["threads_per_op"] for key in OPTIONS}
    assert threads == {"imdb-text-encoder": 0, "translation-translator": 1}
    status, answer = post(port, columns("text", ["a secret review"] * 3))
    assert status == 400
    assert "the request has 3 rows; at most 2 are accepted" in answer["message"]
    status, answer = post(port, columns("text", ["secret " * 40_000]))
    assert status == 413 and answer["error_code"] == "REQUEST_TOO_LARGE"
    assert "at most 209,715 are accepted" in answer["message"]
    assert "secret" not in json.dumps(answer)
    assert post(port, columns("text", TEXTS))[0] == 200
