"""The request limits of `tfx-transformers serve` (pipeline/serving_app.py), as ASGI middleware
around stand-ins for MLflow's app: refused requests state the limit, no error echoes the
request, and what passes reaches the app whole."""

import asyncio
import json

import pytest

from pipeline.serving_app import RequestLimits, without_echo


def call(middleware, body_chunks, headers=(), path="/invocations"):
    """(status, JSON body or bytes, what the app received) of one request."""
    received_by_app = []
    incoming = [
        {"type": "http.request", "body": chunk, "more_body": i < len(body_chunks) - 1}
        for i, chunk in enumerate(body_chunks)
    ]
    sent = []

    async def receive():
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "path": path,
        "method": "POST",
        "headers": [(k.encode(), v.encode()) for k, v in headers],
    }
    asyncio.run(middleware(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    length = dict(start["headers"]).get(b"content-length")
    assert length is None or int(length) == len(body)
    try:
        return start["status"], json.loads(body), received_by_app
    except ValueError:
        return start["status"], body, received_by_app


def app_answering(status, body: bytes, content_type=b"application/json", seen=None):
    async def app(scope, receive, send):
        message = await receive()
        if seen is not None:
            seen.append(message["body"])
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        half = len(body) // 2
        await send({"type": "http.response.body", "body": body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": body[half:]})

    return app


def test_a_body_over_the_limit_gets_413_stating_it_and_never_reaches_the_model():
    seen = []
    limits = RequestLimits(
        app_answering(200, b"{}", seen=seen),
        max_request_bytes=10,
        timeout_seconds=60,
        input_name="text",
    )
    status, answer, _ = call(limits, [b"12345", b"67890", b"X"])  # chunked, no length
    assert status == 413 and answer["error_code"] == "REQUEST_TOO_LARGE"
    assert "at most 10 are accepted" in answer["message"] and "12345" not in answer["message"]
    status, answer, _ = call(limits, [b"x" * 11], headers=[("content-length", "11")])
    assert status == 413 and "11 bytes" in answer["message"]
    assert seen == []
    status, answer, _ = call(limits, [b"12345", b"67890"])  # at the limit: whole, once
    assert (status, answer, seen) == (200, {}, [b"1234567890"])


def test_error_answers_lose_the_echoed_request_and_the_traceback():
    request = b'{"dataframe_split": {"columns": ["text"], "data": [["my secret review"]]}}'
    echoed = json.dumps(
        {
            "error_code": "BAD_REQUEST",
            "stack_trace": "Traceback ...",
            "message": "Failed to predict data '{'text': ['my secret review']}'. "
            "\nError: row 0: the text is empty",
        }
    ).encode()
    limits = RequestLimits(app_answering(400, echoed), 1 << 20, 60, "text")
    status, answer, _ = call(limits, [request])
    assert status == 400
    assert answer == {"error_code": "BAD_REQUEST", "message": "row 0: the text is empty"}
    parse_error = json.dumps(
        {
            "error_code": "BAD_REQUEST",
            "message": (
                "Invalid input. Ensure that input is a valid JSON formatted string. Error: 'x'. "
                "Input: \n" + "my secret review" * 1000 + "\n"
            ),
        }
    ).encode()
    answer = json.loads(without_echo(parse_error))
    assert answer["message"] == (
        "Invalid input. Ensure that input is a valid JSON formatted string. Error: 'x'."
    )


def test_a_long_message_is_cut_and_a_timeout_states_the_limit():
    answer = json.loads(without_echo(json.dumps({"message": "y" * 5000}).encode()))
    assert len(answer["message"]) < 600 and answer["message"].endswith("(5,000 characters)")
    timeout = RequestLimits(
        app_answering(504, b"Request processing time exceeded limit"), 1 << 20, 7, "text"
    )
    status, answer, _ = call(timeout, [b"{}"])
    assert (status, answer["error_code"]) == (504, "TIMEOUT")
    assert "longer than 7 s" in answer["message"]


def test_other_paths_and_good_answers_pass_through_untouched():
    limits = RequestLimits(app_answering(200, b'{"predictions": [1]}'), 4, 60, "text")
    assert call(limits, [b"x" * 100], path="/ping")[:2] == (200, {"predictions": [1]})
    assert call(limits, [b"{}"])[:2] == (200, {"predictions": [1]})


def split(values) -> bytes:
    return json.dumps({"dataframe_split": {"columns": ["text"], "data": [[v] for v in values]}})


@pytest.mark.parametrize(
    "body, message",
    [
        (b'{"inputs": {"text": [null]}}', "row 0: expected a string, got NoneType"),
        (b'{"inputs": {"text": ["fine", 12345]}}', "row 1: expected a string, got int"),
        (split(["fine", None]).encode(), "row 1: expected a string, got NoneType"),
        (b'{"dataframe_records": [{"text": true}]}', "row 0: expected a string, got bool"),
        (b'{"instances": [["a list"]]}', "row 0: expected a string, got list"),
        (b'{"inputs": {"text": ["caf\xe9 ok"]}}', "the request body is not UTF-8 (byte 25)"),
        (b"[" * 100_000 + b"]" * 100_000, "the JSON is nested too deeply"),
    ],
    ids=["null", "a number", "split null", "a boolean", "a list", "latin-1 bytes", "deep JSON"],
)
def test_a_non_text_input_or_an_unreadable_body_gets_a_400_before_mlflow_sees_it(body, message):
    """MLflow's parser answers the last two with 500, and its schema enforcement would turn
    null and 12345 into the texts "None" and "12345"."""
    seen = []
    limits = RequestLimits(app_answering(200, b"{}", seen=seen), 1 << 20, 60, "text")
    status, answer, _ = call(limits, [body])
    assert (status, answer) == (400, {"error_code": "BAD_REQUEST", "message": message})
    assert seen == []
