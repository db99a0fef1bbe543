"""The contract types: requests, errors, text cleaning and the shared prompted instruction."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from evalsite.core.pricing import Usage
from evalsite.core.providers import ErrorKind, ProviderError, Request, schema_instruction
from evalsite.core.providers.base import clean_text, completion, estimate_tokens
from evalsite.core.providers.prompted import SCHEMA_INSTRUCTION, with_schema_instruction
from tests.helpers.providers import OPENAI_KEY, SCHEMA, make_request


def test_requests_normalise_messages_and_stop():
    request = Request(
        model="openai/gpt-4o",
        messages=[{"role": "user", "content": "hi"}],  # type: ignore[arg-type]
        stop="END",  # type: ignore[arg-type]
    )
    assert request.messages == ({"role": "user", "content": "hi"},)
    assert request.stop == ("END",)
    assert (request.provider, request.model_name) == ("openai", "gpt-4o")
    assert Request(model="openrouter/a/b", messages=()).model_name == "a/b"


@pytest.mark.parametrize(
    "message",
    [{"role": "tool", "content": "x"}, {"role": "user", "content": 3}, {"content": "x"}],
)
def test_bad_messages_are_refused(message):
    with pytest.raises(ValueError):
        Request(model="fake/x", messages=(message,))


def test_an_unknown_purpose_is_refused():
    with pytest.raises(ValueError, match="purpose"):
        Request(model="fake/x", messages=(), purpose="grade")


def test_to_json_is_plain_and_complete():
    request = make_request("openai/gpt-4o", temperature=0.5, stop=("a",), schema=SCHEMA, repeat=2)
    data = request.to_json()
    assert data == {
        "model": "openai/gpt-4o",
        "messages": [dict(m) for m in request.messages],
        "temperature": 0.5,
        "max_tokens": None,
        "top_p": None,
        "stop": ["a"],
        "timeout_s": 60,
        "schema": SCHEMA,
        "purpose": "answer",
        "task_id": "",
        "case_id": "",
        "repeat": 2,
        "order": 0,
    }
    data["schema"]["type"] = "changed"
    assert request.schema == SCHEMA  # a copy, not the request's own mapping


def test_from_params_reads_the_suite_params_only():
    params = {"temperature": 0, "max_tokens": 100, "timeout_s": 30, "stop": "X", "seed": 1}
    request = Request.from_params("fake/x", [{"role": "user", "content": "q"}], params, repeat=1)
    assert (
        request.temperature,
        request.max_tokens,
        request.timeout_s,
        request.stop,
        request.repeat,
    ) == (
        0,
        100,
        30,
        ("X",),
        1,
    )


def test_errors_know_whether_to_retry_or_stop_the_model():
    retryable = {ErrorKind.RATE_LIMITED, ErrorKind.SERVER, ErrorKind.TIMEOUT, ErrorKind.NETWORK}
    stops = {ErrorKind.AUTH, ErrorKind.BAD_REQUEST, ErrorKind.UNKNOWN_MODEL}
    for kind in ErrorKind:
        error = ProviderError(kind, "x")
        assert error.retryable is (kind in retryable)
        assert error.stops_model is (kind in stops)


def test_error_messages_are_redacted_bounded_and_clean():
    error = ProviderError(
        "server", f"key {OPENAI_KEY} \ud800 " + "x" * 5000, status=500, retry_after=2.0
    )
    assert OPENAI_KEY not in error.message and "sk-[REDACTED]" in error.message
    assert "\ufffd" in error.message and len(error.message) <= 1000
    assert str(error) == error.message
    copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own object
    assert (copy.kind, copy.message, copy.status, copy.retry_after) == (
        ErrorKind.SERVER,
        error.message,
        500,
        2.0,
    )


def test_clean_text_replaces_lone_surrogates_and_nul_only():
    assert clean_text("a\ud800b\udfffc\x00d😀") == "a\ufffdb\ufffdc\ufffdd😀"
    assert estimate_tokens("") == 0 and estimate_tokens("abcde") == 2


def test_a_blank_completion_is_an_empty_error():
    with pytest.raises(ProviderError) as info:
        completion(" \n", provider="p", usage=Usage(1, 0), finish_reason="length", schema_mode=None)
    assert info.value.kind is ErrorKind.EMPTY and "length" in info.value.message


def test_the_prompted_instruction_is_appended_to_the_last_user_message_once():
    messages = (
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second"},
    )
    request = make_request("fake/x", messages=messages, schema=SCHEMA)
    prepared = with_schema_instruction(request)
    assert prepared.messages[:3] == messages[:3]
    assert prepared.messages[3]["content"] == "second\n\n" + schema_instruction(SCHEMA)
    assert schema_instruction(SCHEMA).startswith(
        SCHEMA_INSTRUCTION + '{"additionalProperties": false'
    )
    assert with_schema_instruction(prepared) == prepared
    assert prepared.schema == SCHEMA


def test_the_instruction_becomes_a_user_message_when_there_is_none():
    request = make_request("fake/x", messages=({"role": "system", "content": "s"},), schema=SCHEMA)
    prepared = with_schema_instruction(request)
    assert prepared.messages[-1] == {"role": "user", "content": schema_instruction(SCHEMA)}
    assert with_schema_instruction(prepared) == prepared


def test_without_a_schema_nothing_is_added():
    request = make_request("fake/x")
    assert with_schema_instruction(request) is request
    assert dataclasses.replace(request) == request
