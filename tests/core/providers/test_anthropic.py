"""Anthropic Messages adapter against a mock server; replies modelled on the API reference."""

from __future__ import annotations

import json

import httpx

from evalsite.core.providers import build_provider
from evalsite.core.providers.anthropic import DEFAULT_MAX_TOKENS, TOOL_NAME
from evalsite.core.providers.prompted import SCHEMA_INSTRUCTION
from tests.helpers.providers import ANTHROPIC_KEY, ENV, SCHEMA, call, make_request, sent_json

MODEL = "anthropic/claude-sonnet-4-5"


def message(content: list[dict], **overrides: object) -> httpx.Response:
    body = {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 2095,
            "output_tokens": 503,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    } | overrides
    return httpx.Response(200, json=body)


def provider():
    return build_provider(MODEL, env=ENV)


def test_the_request_puts_system_at_the_top_level_and_the_key_in_its_header():
    request = make_request(MODEL, temperature=0.2, top_p=0.9, max_tokens=300, stop=("END",))
    _, sent = call(provider(), request, message([{"type": "text", "text": "Billing."}]))
    assert sent.method == "POST"
    assert str(sent.url) == "https://api.anthropic.com/v1/messages"
    assert sent.headers["x-api-key"] == ANTHROPIC_KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers
    assert sent_json(sent) == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 300,
        "system": "You triage support tickets.",
        "messages": [{"role": "user", "content": "I was charged twice."}],
        "temperature": 0.2,
        "top_p": 0.9,
        "stop_sequences": ["END"],
    }
    assert ANTHROPIC_KEY not in str(sent.url) and ANTHROPIC_KEY.encode() not in sent.content


def test_max_tokens_defaults_because_the_api_requires_it():
    _, sent = call(provider(), make_request(MODEL), message([{"type": "text", "text": "Hi"}]))
    body = sent_json(sent)
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS
    assert "temperature" not in body and "stop_sequences" not in body


def test_text_blocks_usage_and_stop_reason_are_read():
    reply = message(
        [{"type": "text", "text": "Hi! "}, {"type": "text", "text": "Billing."}],
        usage={
            "input_tokens": 50,
            "output_tokens": 12,
            "cache_creation_input_tokens": 7,
            "cache_read_input_tokens": 2000,
        },
        stop_reason="max_tokens",
    )
    completion, _ = call(provider(), make_request(MODEL), reply)
    assert completion.text == "Hi! Billing."
    assert completion.finish_reason == "max_tokens"
    assert completion.provider_model == "claude-sonnet-4-5-20250929"
    assert completion.schema_mode is None
    # input_tokens excludes cache reads (priced at the cached rate); writes count as input.
    assert completion.usage is not None
    assert (completion.usage.input_tokens, completion.usage.cached_input_tokens) == (57, 2000)
    assert completion.usage.output_tokens == 12


def test_an_object_schema_is_native_as_a_forced_tool_call():
    tool_use = {
        "type": "tool_use",
        "id": "toolu_01A09q90qw90lq917835lq9",
        "name": TOOL_NAME,
        "input": {"category": "billing"},
    }
    reply = message([tool_use], stop_reason="tool_use")
    completion, sent = call(provider(), make_request(MODEL, schema=SCHEMA), reply)
    body = sent_json(sent)
    assert body["tools"] == [
        {"name": TOOL_NAME, "description": body["tools"][0]["description"], "input_schema": SCHEMA}
    ]
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert SCHEMA_INSTRUCTION not in json.dumps(body)
    assert json.loads(completion.text) == {"category": "billing"}
    assert completion.schema_mode == "native"
    assert completion.finish_reason == "tool_use"


def test_a_schema_that_is_not_an_object_goes_prompted():
    schema = {"type": "array", "items": {"type": "string"}}
    request = make_request(MODEL, schema=schema)
    p = provider()
    assert p.schema_mode(request) == "prompted"
    completion, sent = call(p, request, message([{"type": "text", "text": '["a"]'}]))
    body = sent_json(sent)
    assert "tools" not in body
    assert body["messages"][-1]["content"].startswith(
        "I was charged twice.\n\n" + SCHEMA_INSTRUCTION
    )
    assert completion.schema_mode == "prompted"


def test_native_mode_without_the_tool_call_falls_back_to_the_text():
    reply = message([{"type": "text", "text": "I cannot."}])
    completion, _ = call(provider(), make_request(MODEL, schema=SCHEMA), reply)
    assert completion.text == "I cannot."
    assert completion.schema_mode == "native"
