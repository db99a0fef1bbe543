"""The registry: routing by provider prefix, fake routing, keys needed, unknown providers."""

from __future__ import annotations

import pytest

from evalsite.core.providers import (
    BUILTIN,
    EndpointConfig,
    ErrorKind,
    Provider,
    ProviderError,
    ScriptedReplies,
    build_provider,
    required_key,
)
from evalsite.core.providers.anthropic import AnthropicProvider
from evalsite.core.providers.command import CommandProvider
from evalsite.core.providers.fake import FakeProvider
from evalsite.core.providers.google import GoogleProvider
from evalsite.core.providers.openai import ChatCompletionsProvider
from evalsite.core.providers.scripted import ScriptedProvider
from tests.helpers.providers import ENV

ENDPOINTS = {
    "local-vllm": EndpointConfig(
        "local-vllm", "http://127.0.0.1:8000/v1", "EVALSITE_ENDPOINT_LOCAL_VLLM_KEY"
    ),
    "ollama": EndpointConfig("ollama", "http://localhost:11434/v1", ""),
}
REPLIES = ScriptedReplies.parse("good:\n  t/c: [hello]\n", "replies.yaml")
FULL_ENV = ENV | {"EVALSITE_COMMAND_AGENT": "/bin/true"}


@pytest.mark.parametrize(
    ("model", "cls", "name"),
    [
        ("anthropic/claude-sonnet-4-5", AnthropicProvider, "anthropic"),
        ("openai/gpt-4o-mini", ChatCompletionsProvider, "openai"),
        ("google/gemini-2.5-flash", GoogleProvider, "google"),
        ("openrouter/meta-llama/llama-3.1-8b", ChatCompletionsProvider, "openrouter"),
        ("local-vllm/qwen2.5", ChatCompletionsProvider, "local-vllm"),
        ("ollama/llama3.2", ChatCompletionsProvider, "ollama"),
        ("fake/small", FakeProvider, "fake"),
        ("scripted/good", ScriptedProvider, "scripted"),
        ("command/agent", CommandProvider, "command"),
    ],
)
def test_models_route_by_their_provider_prefix(model, cls, name):
    provider = build_provider(model, env=FULL_ENV, endpoints=ENDPOINTS, replies=REPLIES)
    assert isinstance(provider, cls)
    assert isinstance(provider, Provider)
    assert provider.name == name
    assert provider.version


def test_versions_differ_between_dialects():
    versions = {
        build_provider(m, env=FULL_ENV, endpoints=ENDPOINTS, replies=REPLIES).version
        for m in (
            "anthropic/a",
            "openai/a",
            "google/a",
            "openrouter/a/b",
            "fake/a",
            "scripted/good",
            "command/agent",
        )
    }
    assert len(versions) == 7


@pytest.mark.parametrize(
    "model",
    [
        "anthropic/claude",
        "openai/gpt-4o",
        "scripted/good",
        "command/none",
        "local-vllm/x",
        "nope/x",
    ],
)
def test_fake_routes_every_model_to_the_fake_adapter_without_keys(model):
    provider = build_provider(model, env={}, endpoints=ENDPOINTS, fake=True)
    assert isinstance(provider, FakeProvider)
    assert provider.sleep is False
    assert required_key(model, endpoints=ENDPOINTS, fake=True) is None


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
        ("google/gemini-2.5-flash", "GOOGLE_API_KEY"),
        ("openrouter/anthropic/claude-3.5-sonnet", "OPENROUTER_API_KEY"),
        ("local-vllm/qwen2.5", "EVALSITE_ENDPOINT_LOCAL_VLLM_KEY"),
        ("ollama/llama3.2", None),
        ("fake/small", None),
        ("scripted/good", None),
        ("command/agent", None),
    ],
)
def test_required_key_names_the_variable_each_model_needs(model, variable):
    assert required_key(model, endpoints=ENDPOINTS) == variable


@pytest.mark.parametrize(
    "model",
    ["anthropic/claude", "openai/gpt-4o", "google/gemini", "openrouter/a/b", "local-vllm/q"],
)
def test_a_missing_or_blank_key_is_a_config_error_naming_the_variable(model):
    variable = required_key(model, endpoints=ENDPOINTS)
    for env in ({}, {variable: "  "}):
        with pytest.raises(ProviderError) as info:
            build_provider(model, env=env, endpoints=ENDPOINTS)
        assert info.value.kind is ErrorKind.CONFIG
        assert variable in info.value.message


@pytest.mark.parametrize(
    ("model", "hint"),
    [
        ("opena/gpt-4o", "did you mean 'openai'?"),
        ("antropic/claude", "did you mean 'anthropic'?"),
        ("local-vlm/qwen", "did you mean 'local-vllm'?"),
        ("zzz/model", None),
    ],
)
def test_an_unknown_provider_is_named_with_a_did_you_mean(model, hint):
    for action in (
        lambda: build_provider(model, env=ENV, endpoints=ENDPOINTS),
        lambda: required_key(model, endpoints=ENDPOINTS),
    ):
        with pytest.raises(ProviderError) as info:
            action()
        message = info.value.message
        assert info.value.kind is ErrorKind.CONFIG
        assert f"unknown provider '{model.split('/')[0]}'" in message
        assert (hint in message) if hint else ("did you mean" not in message)
        assert "endpoints: local-vllm, ollama" in message
        assert all(name in message for name in BUILTIN)


@pytest.mark.parametrize("model", ["gpt-4o", "openai/", "/gpt"])
def test_a_string_that_is_not_provider_slash_model_is_refused(model):
    with pytest.raises(ProviderError) as info:
        build_provider(model, env=ENV)
    assert info.value.kind is ErrorKind.CONFIG and "provider/model" in info.value.message


def test_builtin_providers_win_over_an_endpoint_of_the_same_name():
    endpoints = {"openai": EndpointConfig("openai", "http://evil.example/v1", "")}
    provider = build_provider("openai/gpt-4o", env=ENV, endpoints=endpoints)
    assert provider.base_url == "https://api.openai.com/v1"  # type: ignore[attr-defined]
