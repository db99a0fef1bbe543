"""OpenAI Chat Completions adapter against a mock server; replies modelled on the API reference."""

from __future__ import annotations

import httpx
import pytest

from evalsite.core.providers import build_provider
from evalsite.core.providers.openai import strict_compatible
from evalsite.core.providers.prompted import SCHEMA_INSTRUCTION
from tests.helpers.providers import (
    ENV,
    OPENAI_KEY,
    SCHEMA,
    call,
    make_request,
    sent_json,
)

MODEL = "openai/gpt-4.1-mini"


def chat(message: dict | None = None, **overrides: object) -> httpx.Response:
    body = {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4.1-mini-2025-04-14",
        "choices": [
            {
                "index": 0,
                "message": message
                or {"role": "assistant", "content": "Billing.", "refusal": None, "annotations": []},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 19,
            "completion_tokens": 10,
            "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
        "service_tier": "default",
    } | overrides
    return httpx.Response(200, json=body)


def provider():
    return build_provider(MODEL, env=ENV)


def test_the_request_shape_uses_max_completion_tokens_and_a_bearer_key():
    request = make_request(MODEL, temperature=0, top_p=0.5, max_tokens=200, stop=("\n\n",))
    _, sent = call(provider(), request, chat())
    assert sent.method == "POST"
    assert str(sent.url) == "https://api.openai.com/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert sent_json(sent) == {
        "model": "gpt-4.1-mini",
        "messages": [
            {"role": "system", "content": "You triage support tickets."},
            {"role": "user", "content": "I was charged twice."},
        ],
        "temperature": 0,
        "top_p": 0.5,
        "max_completion_tokens": 200,
        "stop": ["\n\n"],
    }
    assert OPENAI_KEY not in str(sent.url) and OPENAI_KEY.encode() not in sent.content


def test_cached_tokens_are_split_out_of_prompt_tokens():
    usage = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920},
    }
    completion, _ = call(provider(), make_request(MODEL), chat(usage=usage))
    assert completion.usage is not None
    assert completion.usage.input_tokens == 86
    assert completion.usage.cached_input_tokens == 1920
    assert completion.usage.output_tokens == 300
    assert completion.finish_reason == "stop"
    assert completion.provider_model == "gpt-4.1-mini-2025-04-14"


def test_missing_usage_gives_none_not_zero():
    body = chat().json()
    del body["usage"]
    completion, _ = call(provider(), make_request(MODEL), httpx.Response(200, json=body))
    assert completion.usage is None


def test_a_strict_compatible_schema_is_native_json_schema():
    completion, sent = call(provider(), make_request(MODEL, schema=SCHEMA), chat())
    body = sent_json(sent)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True},
    }
    assert SCHEMA_INSTRUCTION not in body["messages"][-1]["content"]
    assert completion.schema_mode == "native"


def test_a_schema_strict_mode_would_reject_goes_prompted():
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}
    request = make_request(MODEL, schema=loose)
    completion, sent = call(provider(), request, chat())
    body = sent_json(sent)
    assert "response_format" not in body
    assert body["messages"][-1]["content"].endswith(
        SCHEMA_INSTRUCTION + '{"properties": {"a": {"type": "string"}}, "type": "object"}'
    )
    assert completion.schema_mode == "prompted"


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (SCHEMA, True),
        ({"type": "object", "properties": {}, "additionalProperties": False}, True),
        ({"type": "array", "items": {"type": "string"}}, False),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, False),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["items"],
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"x": {"type": "integer"}}},
                    }
                },
            },
            False,
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["x"],
                "properties": {"x": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}},
                "$defs": {
                    "n": {
                        "type": "object",
                        "properties": {"v": {"type": "string"}},
                        "required": ["v"],
                        "additionalProperties": False,
                    }
                },
            },
            True,
        ),
    ],
)
def test_strict_compatibility_checks_every_object_in_the_schema(schema, expected):
    assert strict_compatible(schema) is expected


def test_a_refusal_is_a_refusal_with_the_models_words():
    refusal = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    completion, _ = call(provider(), make_request(MODEL, schema=SCHEMA), chat(refusal))
    assert completion.refusal == "I can't help with that." and completion.text == ""


def test_content_given_as_parts_is_joined():
    parts = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Bill"}, {"type": "text", "text": "ing"}],
    }
    completion, _ = call(provider(), make_request(MODEL), chat(parts))
    assert completion.text == "Billing"
