"""Every HTTP adapter maps failures the same way, and no error message carries a key."""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import json
from collections.abc import Callable

import httpx
import pytest

from evalsite.core.providers import ErrorKind, build_provider
from evalsite.core.providers.http_errors import parse_retry_after
from tests.core.providers import test_anthropic, test_google, test_openai
from tests.core.providers.test_compatible import ENDPOINTS
from tests.helpers.providers import (
    ANTHROPIC_KEY,
    ENDPOINT_KEY,
    ENV,
    GOOGLE_KEY,
    OPENAI_KEY,
    OPENROUTER_KEY,
    call,
    fail,
    make_request,
    raw,
)


def anthropic_text(text: str) -> httpx.Response:
    return test_anthropic.message([{"type": "text", "text": text}])


def openai_text(text: str) -> httpx.Response:
    return test_openai.chat({"role": "assistant", "content": text, "refusal": None})


def google_text(text: str) -> httpx.Response:
    return test_google.generated([{"text": text}])


ADAPTERS: dict[str, Callable[[str], httpx.Response]] = {
    "anthropic/claude-sonnet-4-5": anthropic_text,
    "openai/gpt-4.1-mini": openai_text,
    "google/gemini-2.5-flash": google_text,
    "openrouter/meta-llama/llama-3.1-8b-instruct": openai_text,
    "local-vllm/qwen2.5-7b-instruct": openai_text,
}
KEYS = (ANTHROPIC_KEY, OPENAI_KEY, GOOGLE_KEY, OPENROUTER_KEY, ENDPOINT_KEY)
adapters = pytest.mark.parametrize("model", list(ADAPTERS))


def failure(model: str, respond, **fields):
    provider = build_provider(model, env=ENV, endpoints=ENDPOINTS)
    return fail(provider, make_request(model, **fields), respond)


def error_body(status: int, kind: str, message: str) -> httpx.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return httpx.Response(status, json=body)


@adapters
@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, ErrorKind.AUTH),
        (403, ErrorKind.AUTH),
        (400, ErrorKind.BAD_REQUEST),
        (404, ErrorKind.UNKNOWN_MODEL),
        (422, ErrorKind.BAD_REQUEST),
        (408, ErrorKind.TIMEOUT),
        (429, ErrorKind.RATE_LIMITED),
        (500, ErrorKind.SERVER),
        (502, ErrorKind.SERVER),
        (503, ErrorKind.SERVER),
        (529, ErrorKind.SERVER),
    ],
)
def test_each_status_maps_to_its_kind(model, status, kind):
    error = failure(model, error_body(status, "some_error", f"status {status} happened"))
    assert error.kind is kind
    assert error.status == status
    assert f"status {status} happened" in error.message
    assert error.retryable is (
        kind in {ErrorKind.RATE_LIMITED, ErrorKind.SERVER, ErrorKind.TIMEOUT}
    )
    assert error.stops_model is (
        kind in {ErrorKind.AUTH, ErrorKind.BAD_REQUEST, ErrorKind.UNKNOWN_MODEL}
    )


@adapters
def test_anthropic_style_overload_529_is_a_retryable_server_error(model):
    error = failure(model, error_body(529, "overloaded_error", "Overloaded"))
    assert (error.kind, error.retryable) == (ErrorKind.SERVER, True)
    assert "overloaded_error" in error.message


@adapters
def test_retry_after_in_seconds_is_read(model):
    reply = httpx.Response(
        429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "7"}
    )
    error = failure(model, reply)
    assert error.kind is ErrorKind.RATE_LIMITED
    assert error.retry_after == 7.0


@adapters
def test_retry_after_as_an_http_date_is_read(model):
    when = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)
    header = email.utils.format_datetime(when, usegmt=True)
    reply = httpx.Response(
        503, json={"error": {"message": "busy"}}, headers={"Retry-After": header}
    )
    error = failure(model, reply)
    assert error.kind is ErrorKind.SERVER
    assert error.retry_after is not None and 25 <= error.retry_after <= 31


def test_retry_after_parsing_covers_milliseconds_dates_in_the_past_and_junk():
    now = dt.datetime(2025, 1, 1, 12, 0, tzinfo=dt.UTC)
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5
    assert parse_retry_after({"retry-after": "Wed, 01 Jan 2025 12:00:10 GMT"}, now) == 10.0
    assert parse_retry_after({"retry-after": "Wed, 01 Jan 2025 11:00:00 GMT"}, now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "nan"}) is None
    assert parse_retry_after({}) is None


@adapters
def test_a_timeout_exception_is_a_timeout(model):
    def respond(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    error = failure(model, respond)
    assert (error.kind, error.retryable, error.status) == (ErrorKind.TIMEOUT, True, None)


@adapters
def test_the_request_deadline_bounds_the_whole_call(model):
    async def respond(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return ADAPTERS[model]("late")

    error = failure(model, respond, timeout_s=0.05)
    assert error.kind is ErrorKind.TIMEOUT
    assert "0.05s" in error.message


@adapters
def test_a_connection_error_is_a_network_error(model):
    def respond(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    error = failure(model, respond)
    assert (error.kind, error.retryable) == (ErrorKind.NETWORK, True)
    assert "Connection refused" in error.message


@adapters
@pytest.mark.parametrize("text", ["<html>Bad gateway</html>", "[1, 2]", "", '{"truncated": '])
def test_a_200_that_is_not_a_json_object_is_malformed(model, text):
    error = failure(model, raw(200, text))
    assert (error.kind, error.retryable, error.stops_model) == (ErrorKind.MALFORMED, False, False)


@adapters
def test_a_200_without_the_expected_fields_is_malformed(model):
    error = failure(model, httpx.Response(200, json={"id": "x", "object": "unexpected"}))
    assert error.kind is ErrorKind.MALFORMED


@adapters
@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_a_200_with_no_text_is_empty(model, text):
    error = failure(model, ADAPTERS[model](text))
    assert (error.kind, error.retryable) == (ErrorKind.EMPTY, False)


@adapters
def test_a_redirect_is_malformed_and_hints_at_the_base_url(model):
    error = failure(model, httpx.Response(301, headers={"location": "https://elsewhere.example/"}))
    assert error.kind is ErrorKind.MALFORMED
    assert "base URL" in error.message


@adapters
def test_a_lone_surrogate_in_a_reply_becomes_a_replacement_character(model):
    body = (
        ADAPTERS[model]("PLACEHOLDER")
        .content.decode()
        .replace("PLACEHOLDER", "ok \\ud800 and \\udfff")
    )
    completion, _ = call(
        build_provider(model, env=ENV, endpoints=ENDPOINTS), make_request(model), raw(200, body)
    )
    assert completion.text == "ok \ufffd and \ufffd"
    completion.text.encode("utf-8")  # storable


@adapters
def test_a_nul_in_a_reply_is_replaced_too(model):
    body = ADAPTERS[model]("PLACEHOLDER").content.decode().replace("PLACEHOLDER", "a\\u0000b")
    completion, _ = call(
        build_provider(model, env=ENV, endpoints=ENDPOINTS), make_request(model), raw(200, body)
    )
    assert completion.text == "a\ufffdb"


def echo_headers(status: int) -> Callable[[httpx.Request], httpx.Response]:
    """A hostile server that puts every request header it got into its error message."""

    def respond(request: httpx.Request) -> httpx.Response:
        echoed = json.dumps(dict(request.headers))
        return raw(status, json.dumps({"error": {"type": "echo", "message": echoed}}))

    return respond


@adapters
@pytest.mark.parametrize("status", [400, 401, 403, 429, 500])
def test_no_error_message_repeats_a_key_even_when_the_server_echoes_it(model, status):
    error = failure(model, echo_headers(status))
    shown = " ".join([error.message, str(error), repr(error), str(error.args)])
    assert not [key for key in KEYS if key in shown]
    assert "REDACTED" in error.message


@adapters
def test_no_malformed_reply_message_repeats_a_key(model):
    def respond(request: httpx.Request) -> httpx.Response:
        return raw(200, "oops " + json.dumps(dict(request.headers)))

    error = failure(model, respond)
    assert error.kind is ErrorKind.MALFORMED
    assert not [key for key in KEYS if key in error.message]


@adapters
def test_the_provider_repr_never_shows_its_key(model):
    provider = build_provider(model, env=ENV, endpoints=ENDPOINTS)
    assert not [key for key in KEYS if key in repr(provider) or key in str(provider)]


def test_openai_insufficient_quota_429_stops_the_model_instead_of_retrying():
    body = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    error = failure("openai/gpt-4.1-mini", httpx.Response(429, json=body))
    assert error.kind is ErrorKind.AUTH and error.stops_model and not error.retryable
