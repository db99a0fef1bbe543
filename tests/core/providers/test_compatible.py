"""OpenAI-compatible servers: OpenRouter and admin-defined endpoints."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from evalsite.core.providers import (
    EndpointConfig,
    ErrorKind,
    ProviderError,
    build_provider,
    make_client,
)
from evalsite.core.providers.prompted import SCHEMA_INSTRUCTION
from tests.core.providers.test_openai import chat
from tests.helpers.providers import (
    ENDPOINT_KEY,
    ENV,
    OPENROUTER_KEY,
    SCHEMA,
    call,
    fail,
    make_request,
    sent_json,
)

ENDPOINTS = {
    "local-vllm": EndpointConfig(
        "local-vllm", "http://127.0.0.1:8000/v1/", "EVALSITE_ENDPOINT_LOCAL_VLLM_KEY"
    ),
    "ollama": EndpointConfig("ollama", "http://localhost:11434/v1", ""),
}


def test_openrouter_sends_the_rest_of_the_model_string_to_its_base_url():
    request = make_request("openrouter/anthropic/claude-3.5-sonnet", max_tokens=50)
    provider = build_provider(request.model, env=ENV)
    assert provider.name == "openrouter"
    _, sent = call(provider, request, chat())
    assert str(sent.url) == "https://openrouter.ai/api/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {OPENROUTER_KEY}"
    body = sent_json(sent)
    assert body["model"] == "anthropic/claude-3.5-sonnet"
    assert body["max_tokens"] == 50 and "max_completion_tokens" not in body


def test_compatible_servers_always_use_prompted_schemas():
    request = make_request("openrouter/openai/gpt-4o", schema=SCHEMA)
    completion, sent = call(build_provider(request.model, env=ENV), request, chat())
    body = sent_json(sent)
    assert "response_format" not in body
    assert SCHEMA_INSTRUCTION in body["messages"][-1]["content"]
    assert completion.schema_mode == "prompted"


def test_an_endpoint_uses_its_base_url_and_its_key_variable():
    request = make_request("local-vllm/qwen2.5-7b-instruct")
    provider = build_provider(request.model, env=ENV, endpoints=ENDPOINTS)
    assert provider.name == "local-vllm"
    _, sent = call(provider, request, chat())
    assert str(sent.url) == "http://127.0.0.1:8000/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {ENDPOINT_KEY}"
    assert sent_json(sent)["model"] == "qwen2.5-7b-instruct"


def test_an_endpoint_without_a_key_variable_sends_no_authorization():
    request = make_request("ollama/llama3.2")
    _, sent = call(build_provider(request.model, env={}, endpoints=ENDPOINTS), request, chat())
    assert str(sent.url) == "http://localhost:11434/v1/chat/completions"
    assert "authorization" not in sent.headers


def test_an_openrouter_error_inside_a_200_is_mapped_by_its_code():
    body = {"error": {"code": 502, "message": "Provider returned error", "metadata": {}}}
    request = make_request("openrouter/openai/gpt-4o")
    error = fail(build_provider(request.model, env=ENV), request, httpx.Response(200, json=body))
    assert error.kind is ErrorKind.SERVER and error.retryable
    assert "Provider returned error" in error.message


def test_insufficient_credits_402_stops_the_model():
    body = {"error": {"code": 402, "message": "Insufficient credits"}}
    request = make_request("openrouter/openai/gpt-4o")
    error = fail(build_provider(request.model, env=ENV), request, httpx.Response(402, json=body))
    assert error.kind is ErrorKind.AUTH and error.stops_model


def test_an_endpoint_url_without_a_scheme_is_a_config_error_not_a_retry():
    endpoints = {"bad": EndpointConfig("bad", "localhost:8000/v1", "")}
    request = make_request("bad/model")
    provider = build_provider(request.model, env={}, endpoints=endpoints)

    async def run() -> None:
        async with make_client() as client:  # the engine's own client: the URL is refused first
            await provider.complete(request, client)

    with pytest.raises(ProviderError) as info:
        asyncio.run(run())
    assert info.value.kind is ErrorKind.CONFIG and "base URL" in info.value.message
