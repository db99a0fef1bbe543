"""Gemini generateContent adapter against a mock server; replies modelled on the API reference."""

from __future__ import annotations

import httpx

from evalsite.core.providers import ErrorKind, build_provider
from evalsite.core.providers.prompted import SCHEMA_INSTRUCTION
from tests.helpers.providers import (
    ENV,
    GOOGLE_KEY,
    SCHEMA,
    call,
    fail,
    make_request,
    sent_json,
)

MODEL = "google/gemini-2.5-flash"


def generated(parts: list[dict] | None = None, **overrides: object) -> httpx.Response:
    body = {
        "candidates": [
            {
                "content": {"parts": parts or [{"text": "Billing."}], "role": "model"},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 8,
            "candidatesTokenCount": 12,
            "totalTokenCount": 20,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}],
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "AbCdEf",
    } | overrides
    return httpx.Response(200, json=body)


def provider():
    return build_provider(MODEL, env=ENV)


def test_the_key_goes_only_in_the_x_goog_api_key_header():
    _, sent = call(provider(), make_request(MODEL), generated())
    assert sent.method == "POST"
    url = str(sent.url)
    assert url == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert sent.url.params == httpx.QueryParams()
    assert sent.headers["x-goog-api-key"] == GOOGLE_KEY
    assert GOOGLE_KEY not in url and GOOGLE_KEY.encode() not in sent.content


def test_the_body_uses_contents_system_instruction_and_generation_config():
    messages = (
        {"role": "system", "content": "You triage support tickets."},
        {"role": "user", "content": "I was charged twice."},
        {"role": "assistant", "content": "Which order?"},
        {"role": "user", "content": "Order 7."},
    )
    request = make_request(
        MODEL, messages=messages, temperature=0.3, top_p=0.8, max_tokens=100, stop=("END",)
    )
    _, sent = call(provider(), request, generated())
    assert sent_json(sent) == {
        "contents": [
            {"role": "user", "parts": [{"text": "I was charged twice."}]},
            {"role": "model", "parts": [{"text": "Which order?"}]},
            {"role": "user", "parts": [{"text": "Order 7."}]},
        ],
        "systemInstruction": {"parts": [{"text": "You triage support tickets."}]},
        "generationConfig": {
            "temperature": 0.3,
            "topP": 0.8,
            "maxOutputTokens": 100,
            "stopSequences": ["END"],
        },
    }


def test_a_schema_is_native_through_response_json_schema():
    completion, sent = call(
        provider(),
        make_request(MODEL, schema=SCHEMA),
        generated([{"text": '{"category": "billing"}'}]),
    )
    config = sent_json(sent)["generationConfig"]
    assert config == {"responseMimeType": "application/json", "responseJsonSchema": SCHEMA}
    assert SCHEMA_INSTRUCTION not in sent.content.decode()
    assert completion.schema_mode == "native"
    assert completion.text == '{"category": "billing"}'


def test_usage_subtracts_cached_content_and_counts_thoughts_as_output():
    usage = {
        "promptTokenCount": 1000,
        "cachedContentTokenCount": 800,
        "candidatesTokenCount": 40,
        "thoughtsTokenCount": 60,
        "totalTokenCount": 1100,
    }
    completion, _ = call(provider(), make_request(MODEL), generated(usageMetadata=usage))
    assert completion.usage is not None
    assert completion.usage.input_tokens == 200
    assert completion.usage.cached_input_tokens == 800
    assert completion.usage.output_tokens == 100
    assert completion.finish_reason == "STOP"
    assert completion.provider_model == "gemini-2.5-flash"


def test_thought_parts_are_skipped_and_text_parts_joined():
    parts = [{"text": "thinking…", "thought": True}, {"text": "Bill"}, {"text": "ing."}]
    completion, _ = call(provider(), make_request(MODEL), generated(parts))
    assert completion.text == "Billing."


def test_a_blocked_prompt_is_a_refusal_naming_the_reason():
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 8}}
    completion, _ = call(provider(), make_request(MODEL), httpx.Response(200, json=body))
    assert completion.refusal == "prompt blocked: SAFETY"


def test_a_candidate_stopped_for_safety_with_no_text_is_a_refusal():
    body = {"candidates": [{"finishReason": "SAFETY", "index": 0}]}
    completion, _ = call(provider(), make_request(MODEL), httpx.Response(200, json=body))
    assert completion.refusal == "finish reason SAFETY" and completion.text == ""


def test_an_invalid_key_reported_as_400_is_an_auth_error():
    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ],
        }
    }
    error = fail(provider(), make_request(MODEL), httpx.Response(400, json=body))
    assert error.kind is ErrorKind.AUTH and error.stops_model
    assert "API key not valid" in error.message


def test_a_retry_delay_in_the_body_is_the_retry_after():
    body = {
        "error": {
            "code": 429,
            "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "46s"}],
        }
    }
    error = fail(provider(), make_request(MODEL), httpx.Response(429, json=body))
    assert error.kind is ErrorKind.RATE_LIMITED
    assert error.retry_after == 46.0
    assert "RESOURCE_EXHAUSTED" in error.message
