"""The request limits of `tfx-transformers serve` (pipeline/serving_app.py), as ASGI middleware
around stand-ins for MLflow's app: refused requests state the limit, no error echoes the
request, and what passes reaches the app whole."""

import asyncio
import json

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
        app_answering(200, b"{}", seen=seen), max_request_bytes=10, timeout_seconds=60
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
    limits = RequestLimits(app_answering(400, echoed), 1 << 20, 60)
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
        app_answering(504, b"Request processing time exceeded limit"), 1 << 20, timeout_seconds=7
    )
    status, answer, _ = call(timeout, [b"{}"])
    assert (status, answer["error_code"]) == (504, "TIMEOUT")
    assert "longer than 7 s" in answer["message"]


def test_other_paths_and_good_answers_pass_through_untouched():
    limits = RequestLimits(app_answering(200, b'{"predictions": [1]}'), 4, 60)
    assert call(limits, [b"x" * 100], path="/ping")[:2] == (200, {"predictions": [1]})
    assert call(limits, [b"{}"])[:2] == (200, {"predictions": [1]})
