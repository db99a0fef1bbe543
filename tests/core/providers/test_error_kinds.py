"""Each provider's documented error bodies and finish reasons give the right error kind,
refusal or truncation (issue 26): OpenAI ``{"error": {message, type, param, code}}``,
Anthropic ``{"type": "error", "error": {type, message}}``, Gemini ``{"error": {code,
message, status, details}}``."""

from __future__ import annotations

import random

import httpx
import pytest

from evalsite.core.pacing import RETRY_AFTER_CAP_S, backoff_delay
from evalsite.core.providers import ErrorKind, build_provider
from evalsite.core.report.build import AnswerRow
from evalsite.core.scoring.scorecard import Criterion, score_answer
from tests.core.providers import test_anthropic, test_google, test_openai
from tests.helpers.providers import ENV, call, fail, make_request

OPENAI = "openai/o3"
ANTHROPIC = "anthropic/claude-opus-4-1"
GOOGLE = "google/gemini-2.5-pro"


def complete(model: str, respond):
    return call(build_provider(model, env=ENV), make_request(model), respond)[0]


def failure(model: str, respond):
    return fail(build_provider(model, env=ENV), make_request(model), respond)


def openai_error(status: int, message: str, type_: str, param=None, code=None, headers=None):
    body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    return httpx.Response(status, json=body, headers=headers or {})


def anthropic_error(status: int, type_: str, message: str, headers=None):
    body = {"type": "error", "error": {"type": type_, "message": message}}
    return httpx.Response(status, json=body, headers=headers or {})


def google_error(status: int, state: str, message: str, details=(), headers=None):
    body = {"error": {"code": status, "message": message, "status": state, "details": details}}
    return httpx.Response(status, json=body, headers=headers or {})


# --- a configuration 400: stops the model, quoting the provider and naming the parameter ---


def test_openai_unsupported_value_is_a_bad_request_naming_its_parameter():
    text = (
        "Unsupported value: 'temperature' does not support 0 with this model. "
        "Only the default (1) value is supported."
    )
    reply = openai_error(400, text, "invalid_request_error", "temperature", "unsupported_value")
    error = failure(OPENAI, reply)
    assert error.kind is ErrorKind.BAD_REQUEST
    assert error.stops_model and not error.retryable
    assert "parameter temperature" in error.message
    assert text in error.message


def test_openai_unsupported_parameter_is_a_bad_request_naming_its_parameter():
    text = "Unsupported parameter: 'stop' is not supported with this model."
    reply = openai_error(400, text, "invalid_request_error", "stop", "unsupported_parameter")
    error = failure("openai/o4-mini", reply)
    assert error.kind is ErrorKind.BAD_REQUEST
    assert "parameter stop" in error.message and text in error.message


def test_anthropic_invalid_request_quotes_the_message():
    text = "`temperature` and `top_p` cannot both be specified for this model. Please use only one."
    error = failure(ANTHROPIC, anthropic_error(400, "invalid_request_error", text))
    assert error.kind is ErrorKind.BAD_REQUEST and error.stops_model
    assert error.message == f"anthropic HTTP 400 invalid_request_error: {text}"


def test_google_invalid_argument_names_the_field_it_violates():
    violation = {
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        "fieldViolations": [{"field": "generation_config.top_p", "description": "out of range"}],
    }
    text = "Invalid value at 'generation_config.top_p' (TYPE_FLOAT), 7"
    error = failure(GOOGLE, google_error(400, "INVALID_ARGUMENT", text, [violation]))
    assert error.kind is ErrorKind.BAD_REQUEST and error.stops_model
    assert "parameter generation_config.top_p" in error.message and text in error.message


# --- keys and models ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "reply"),
    [
        (OPENAI, openai_error(401, "Incorrect API key provided.", "invalid_request_error",
                              code="invalid_api_key")),
        (ANTHROPIC, anthropic_error(401, "authentication_error", "invalid x-api-key")),
        (GOOGLE, google_error(401, "UNAUTHENTICATED", "Request had invalid credentials.")),
    ],
)  # fmt: skip
def test_a_401_is_a_key_problem_that_stops_every_model_of_the_provider(model, reply):
    error = failure(model, reply)
    assert error.kind is ErrorKind.AUTH
    assert error.stops_provider and error.stops_model and not error.retryable


@pytest.mark.parametrize(
    ("model", "reply"),
    [
        (OPENAI, openai_error(403, "Project does not have access to this model.",
                              "invalid_request_error")),
        (ANTHROPIC, anthropic_error(403, "permission_error", "not allowed to use this model")),
        (GOOGLE, google_error(403, "PERMISSION_DENIED", "Permission denied on the model.")),
    ],
)  # fmt: skip
def test_a_403_is_a_key_problem_for_that_model_only(model, reply):
    error = failure(model, reply)
    assert error.kind is ErrorKind.AUTH
    assert error.stops_model and not error.stops_provider


@pytest.mark.parametrize(
    ("model", "reply", "quoted"),
    [
        (OPENAI, openai_error(404, "The model `o9` does not exist or you do not have access to "
                              "it.", "invalid_request_error", "model", "model_not_found"),
         "The model `o9` does not exist"),
        (ANTHROPIC, anthropic_error(404, "not_found_error", "model: claude-opus-9"),
         "model: claude-opus-9"),
        (GOOGLE, google_error(404, "NOT_FOUND", "models/gemini-9 is not found for API version "
                              "v1beta"), "models/gemini-9 is not found"),
    ],
)  # fmt: skip
def test_a_404_is_an_unknown_model_that_stops_the_model(model, reply, quoted):
    error = failure(model, reply)
    assert error.kind is ErrorKind.UNKNOWN_MODEL
    assert error.stops_model and not error.stops_provider and not error.retryable
    assert quoted in error.message


# --- retried, with the provider's retry-after -----------------------------------------------


@pytest.mark.parametrize(
    ("model", "reply", "kind"),
    [
        (OPENAI, openai_error(429, "Rate limit reached for o3.", "requests",
                              code="rate_limit_exceeded", headers={"retry-after": "2"}),
         ErrorKind.RATE_LIMITED),
        (ANTHROPIC, anthropic_error(429, "rate_limit_error", "Number of requests has exceeded "
                                    "your rate limit", {"retry-after": "2"}),
         ErrorKind.RATE_LIMITED),
        (ANTHROPIC, anthropic_error(529, "overloaded_error", "Overloaded", {"retry-after": "2"}),
         ErrorKind.SERVER),
        (GOOGLE, google_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted.",
                              headers={"retry-after": "2"}), ErrorKind.RATE_LIMITED),
        (GOOGLE, google_error(503, "UNAVAILABLE", "The model is overloaded.",
                              headers={"retry-after": "2"}), ErrorKind.SERVER),
    ],
)  # fmt: skip
def test_rate_limits_and_overloads_are_retried_after_the_providers_delay(model, reply, kind):
    error = failure(model, reply)
    assert error.kind is kind and error.retryable and not error.stops_model
    assert error.retry_after == 2.0
    # The wait the runner computes: never under the provider's delay, whatever the jitter.
    for attempt in range(1, 4):
        delay = backoff_delay(attempt, error.retry_after, rng=random.Random(attempt))
        assert 2.0 <= delay <= max(2.0, 2.0 ** (attempt - 1))


def test_a_retry_after_past_the_cap_waits_the_cap():
    assert backoff_delay(1, 3600, rng=random.Random(0)) == RETRY_AFTER_CAP_S


def test_anthropic_overloaded_529_says_so():
    error = failure(ANTHROPIC, anthropic_error(529, "overloaded_error", "Overloaded"))
    assert error.message == "anthropic HTTP 529 overloaded_error: Overloaded"


# --- refusals: recorded as refusals, with their usage ---------------------------------------


def test_an_openai_refusal_is_a_refusal_with_its_words_and_usage():
    message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    completion = complete(OPENAI, test_openai.chat(message))
    assert completion.refusal == "I can't help with that."
    assert completion.text == ""
    assert completion.usage is not None and completion.usage.output_tokens == 10


def test_an_openai_content_filter_finish_with_no_text_is_a_refusal():
    reply = test_openai.chat({"role": "assistant", "content": None, "refusal": None})
    body = reply.json()
    body["choices"][0]["finish_reason"] = "content_filter"
    completion = complete(OPENAI, httpx.Response(200, json=body))
    assert completion.refusal == "finish reason content_filter"
    assert completion.finish_reason == "content_filter"


def test_an_openai_content_filter_finish_with_text_keeps_the_text():
    body = test_openai.chat().json()
    body["choices"][0]["finish_reason"] = "content_filter"
    completion = complete(OPENAI, httpx.Response(200, json=body))
    assert completion.refusal is None and completion.text == "Billing."


@pytest.mark.parametrize("content", [[], [{"type": "text", "text": "I'll start with"}]])
def test_an_anthropic_refusal_stop_reason_is_a_refusal(content):
    completion = complete(ANTHROPIC, test_anthropic.message(content, stop_reason="refusal"))
    assert completion.refusal == "stop reason refusal"
    assert completion.text == "" and completion.finish_reason == "refusal"
    assert completion.usage is not None and completion.usage.output_tokens == 503


@pytest.mark.parametrize(
    "reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"]
)
def test_a_gemini_candidate_stopped_by_a_filter_with_no_text_is_a_refusal(reason):
    body = {
        "candidates": [{"finishReason": reason, "index": 0}],
        "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
    }
    completion = complete(GOOGLE, httpx.Response(200, json=body))
    assert completion.refusal == f"finish reason {reason}"
    assert completion.finish_reason == reason
    assert completion.usage is not None and completion.usage.input_tokens == 8


def test_a_gemini_blocked_prompt_is_a_refusal_naming_the_block_reason():
    body = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
    }
    completion = complete(GOOGLE, httpx.Response(200, json=body))
    assert completion.refusal == "prompt blocked: PROHIBITED_CONTENT"
    assert completion.usage is not None and completion.usage.input_tokens == 8


def test_a_reply_with_no_text_and_an_ordinary_finish_is_still_empty():
    body = test_openai.chat({"role": "assistant", "content": "", "refusal": None})
    assert failure(OPENAI, body).kind is ErrorKind.EMPTY


# --- truncations: the answer kept, its finish reason saying so ------------------------------


@pytest.mark.parametrize(
    ("model", "reply", "reason"),
    [
        (OPENAI, test_openai.chat(), "length"),
        (ANTHROPIC, test_anthropic.message([{"type": "text", "text": "Bill"}]), "max_tokens"),
        (GOOGLE, test_google.generated([{"text": "Bill"}]), "MAX_TOKENS"),
    ],
)
def test_a_reply_stopped_at_its_token_limit_is_kept_with_its_finish_reason(model, reply, reason):
    body = reply.json()
    if model == OPENAI:
        body["choices"][0]["finish_reason"] = reason
    elif model == ANTHROPIC:
        body["stop_reason"] = reason
    else:
        body["candidates"][0]["finishReason"] = reason
    completion = complete(model, httpx.Response(200, json=body))
    assert completion.text and completion.refusal is None
    assert completion.finish_reason == reason


# --- how a refusal is scored -----------------------------------------------------------------


def test_a_refusal_scores_zero_on_a_scorecard_where_a_provider_error_is_left_out():
    card = (Criterion("format", 1, "schema"),)
    base = {"task": "t", "case": "c", "contestant": "m", "repeat": 0, "status": "error"}
    refusal = score_answer(card, AnswerRow(**base, error_kind="refused"))
    timeout = score_answer(card, AnswerRow(**base, error_kind="timeout"))
    assert (refusal.score, refusal.passed, refusal.error) == (0.0, False, "")
    assert (timeout.score, timeout.error) == (None, "timeout")
    assert score_answer((), AnswerRow(**base, error_kind="refused")).score == 0.0
