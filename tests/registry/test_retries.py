"""The registry's retries while a tracking server does not answer (mlflow_registry.with_retries,
on tenacity), without a server."""

import logging

import pytest
import requests

from components.model_registry.mlflow_registry import RegistryUnavailable, with_retries

SERVER = "http://tracking.invalid:5000"


def failing(times: int, error: Exception):
    calls = []

    def call():
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "registered"

    return call, calls


def test_a_server_that_answers_after_a_refusal_is_retried_once_with_a_warning(caplog):
    call, calls = failing(1, requests.ConnectionError("refused"))
    with caplog.at_level(logging.WARNING):
        assert with_retries(call, SERVER, seconds=30) == "registered"
    assert len(calls) == 2
    assert [r.getMessage() for r in caplog.records] == [
        f"MLflow tracking server {SERVER} did not answer (attempt 1): retrying in 1 s"
    ]


def test_a_refused_request_is_not_retried():
    call, calls = failing(1, ValueError("bad request"))
    with pytest.raises(ValueError, match="bad request"):
        with_retries(call, SERVER, seconds=30)
    assert len(calls) == 1


def test_a_server_silent_past_the_budget_fails_naming_it_and_the_last_error():
    call, calls = failing(10, requests.Timeout("timed out"))
    with pytest.raises(RegistryUnavailable, match=f"{SERVER} did not answer .*timed out") as info:
        with_retries(call, SERVER, seconds=0.5)  # the first wait (1 s) would pass the budget
    assert len(calls) == 1 and "(1 attempts;" in str(info.value)
    assert isinstance(info.value.__cause__, requests.Timeout)
