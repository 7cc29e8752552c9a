"""The HTTP server behind `tfx-transformers serve`: MLflow's own scoring server (its FastAPI app,
`POST /invocations`, under uvicorn) for one registered model version, with bounded requests.

- A request body over the size limit is refused with 413 before it is read whole (its
  Content-Length, or the bytes as they arrive); the answer states the limit.
- A request of more rows than the limit is refused with 400 by the model's checks
  (components/model_registry/pyfunc_model.py reads contract.MAX_ROWS_VARIABLE).
- A body that is not UTF-8, JSON nested deeper than Python's parser goes, and an input value
  that is null, a number or another non-text are refused with 400 here, before MLflow's parser
  (which answers the first two with 500) and its schema enforcement (which turns null and
  12345 into the texts "None" and "12345") see them (contract.check_request).
- A request that takes longer than the timeout gets 504 (MLflow's own timeout, which this
  sets: MLFLOW_SCORING_SERVER_REQUEST_TIMEOUT).
- No error answer echoes the request: MLflow's messages quote the data they could not parse or
  predict ("Failed to predict data '...'"), and carry a server-side traceback; both are cut.
- A JSON request that holds the model's one input column and nothing else, in any of MLflow's
  four forms (`dataframe_split`, `dataframe_records`, `inputs`, `instances`), is answered here
  by the model's own `answers` (components/model_registry/pyfunc_model.py), with MLflow's
  answer (`{"predictions": [...]}`) and timeout, without the DataFrame round trip and schema
  enforcement that cost more than the text encoder's model (docs/serving.md). Any other
  request, and any that fails there, is MLflow's app's to answer, errors included.

uvicorn calls `create_app` in each worker process (`--factory`); the settings come from the
environment (`serve.Serving` sets them). Importing this module builds nothing.
"""

import asyncio
import json
import os
import re
from typing import Callable, Optional

from trainer_module.serving import contract

MODEL_URI = "TFXT_SERVE_MODEL_URI"
MAX_REQUEST_BYTES = "TFXT_SERVE_MAX_REQUEST_BYTES"
# A local registry's artifact root: loading the model builds its store, which would otherwise
# create an empty `mlruns/` in the directory that `serve` was started from.
ARTIFACT_ROOT = "TFXT_SERVE_ARTIFACT_ROOT"
TIMEOUT = "MLFLOW_SCORING_SERVER_REQUEST_TIMEOUT"  # read by MLflow's scoring server
MAX_MESSAGE_CHARACTERS = 500  # of an error message, once the echoed data is cut
# Where MLflow's messages quote the request, and what stands in for the quote.
ECHOES = (
    (re.compile(r"^Failed to predict data '.*'\.\s*\nError: ", re.S), ""),
    (re.compile(r"\s*Input:\s*\n.*$", re.S), ""),
    (
        re.compile(r"Failed to enforce schema of data '.*' with schema '(.*?)'\. Error: ", re.S),
        r"The request does not fit the model's input schema \1: ",
    ),
)


def refusal(status: int, error_code: str, message: str) -> tuple:
    """(status, headers, body) of a JSON error answer in MLflow's form."""
    body = json.dumps({"error_code": error_code, "message": message}).encode()
    return (
        status,
        [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        body,
    )


def without_echo(body: bytes) -> bytes:
    """An error answer's JSON without the request it quotes, or its traceback."""
    try:
        answer = json.loads(body)
    except ValueError:
        answer = {"error_code": "BAD_REQUEST", "message": body.decode("utf-8", "replace")}
    if not isinstance(answer, dict):
        return body
    message = str(answer.get("message", ""))
    for echo, replacement in ECHOES:
        message = echo.sub(replacement, message)
    if len(message) > MAX_MESSAGE_CHARACTERS:
        message = message[:MAX_MESSAGE_CHARACTERS] + f" ... ({len(message):,} characters)"
    answer["message"] = message
    answer.pop("stack_trace", None)
    return json.dumps(answer).encode()


def plain_values(payload, input_name: str) -> Optional[list]:
    """The raw values of a parsed JSON request that holds `input_name`'s column and nothing
    else, in one of MLflow's four forms; None for any other request."""
    if not isinstance(payload, dict) or len(payload) != 1:
        return None
    ((form, value),) = payload.items()
    values = None
    if form == "dataframe_split" and isinstance(value, dict) and set(value) == {"columns", "data"}:
        rows = value["data"]
        if value["columns"] == [input_name] and isinstance(rows, list):
            if all(isinstance(row, list) and len(row) == 1 for row in rows):
                values = [row[0] for row in rows]
    elif form in ("dataframe_records", "instances") and isinstance(value, list):
        if all(isinstance(row, dict) and list(row) == [input_name] for row in value):
            values = [row[input_name] for row in value]
    elif form == "inputs" and isinstance(value, dict) and list(value) == [input_name]:
        if isinstance(value[input_name], list):
            values = value[input_name]
    return values or None


class RequestLimits:
    """ASGI middleware: the size limit on `/invocations` bodies (read here, within the limit,
    then handed to MLflow's app, which reads whole bodies anyway), error answers without the
    request in them, and plain JSON requests answered by `answers` (the model's) directly."""

    def __init__(
        self,
        app,
        max_request_bytes: int,
        timeout_seconds: int,
        input_name: str,
        answers: Optional[Callable[[list], list]] = None,
    ):
        self.app, self.max_bytes, self.timeout = app, max_request_bytes, timeout_seconds
        self.input_name, self.answers = input_name, answers

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != "/invocations":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length", b"").strip()
        if declared.isdigit() and int(declared) > self.max_bytes:
            return await self._answer(send, *self._too_large(int(declared)))
        received, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            received += message.get("body", b"")
            if len(received) > self.max_bytes:
                return await self._answer(send, *self._too_large(len(received)))
            more = message.get("more_body", False)
        body = bytes(received)
        try:
            payload = contract.check_request(body, self.input_name)
        except contract.BadInput as error:
            return await self._answer(send, *refusal(400, "BAD_REQUEST", str(error)))
        json_body = headers.get(b"content-type", b"").startswith(b"application/json")
        values = plain_values(payload, self.input_name) if json_body else None
        if values and self.answers:
            try:
                answers = await asyncio.wait_for(
                    asyncio.to_thread(self.answers, values), self.timeout
                )
            except asyncio.TimeoutError:
                return await self._answer(send, *self._timed_out())
            except Exception:  # noqa: BLE001  MLflow's app answers it, with its own error
                pass
            else:
                answer = json.dumps({"predictions": answers}).encode()
                return await self._answer(
                    send,
                    200,
                    [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(answer)).encode()),
                    ],
                    answer,
                )
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        started, held = {}, []

        async def send_without_echo(message):
            if message["type"] == "http.response.start" and message["status"] >= 400:
                started.update(message)  # held until the whole error body is here
                return
            if started and message["type"] == "http.response.body":
                held.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                if started["status"] == 504:  # MLflow's timeout answers in plain text
                    status, headers, answer = self._timed_out()
                else:
                    status, answer = started["status"], without_echo(b"".join(held))
                    headers = [
                        (k, v)
                        for k, v in started.get("headers", [])
                        if k.lower() != b"content-length"
                    ]
                    headers.append((b"content-length", str(len(answer)).encode()))
                await send({"type": "http.response.start", "status": status, "headers": headers})
                return await send({"type": "http.response.body", "body": answer})
            return await send(message)

        await self.app(scope, replay, send_without_echo)

    def _timed_out(self) -> tuple:
        return refusal(
            504,
            "TIMEOUT",
            f"the request took longer than {self.timeout} s (tfx-transformers serve --timeout)",
        )

    def _too_large(self, size: int) -> tuple:
        return refusal(
            413,
            "REQUEST_TOO_LARGE",
            f"the request has {size:,} bytes or more; at most {self.max_bytes:,} are "
            "accepted (tfx-transformers serve --max-request-mb)",
        )

    @staticmethod
    async def _answer(send, status, headers, body):
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def create_app():
    """MLflow's scoring app for the model the environment names, within the limits."""
    from mlflow.pyfunc import scoring_server

    from components.model_registry.mlflow_compat import default_artifacts_in

    with default_artifacts_in(os.environ.get(ARTIFACT_ROOT)):
        model = scoring_server.load_model_with_mlflow_config(os.environ[MODEL_URI])
    (input_name,) = model.metadata.get_input_schema().input_names()
    return RequestLimits(
        scoring_server.init(model),
        int(os.environ.get(MAX_REQUEST_BYTES, contract.MAX_REQUEST_BYTES)),
        int(os.environ.get(TIMEOUT, contract.REQUEST_TIMEOUT_SECONDS)),
        input_name,
        # A version registered before the model had `answers` is answered by MLflow's app.
        getattr(model.unwrap_python_model(), "answers", None),
    )
