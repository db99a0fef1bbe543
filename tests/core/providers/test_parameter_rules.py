"""What each model is sent of a suite's parameters (capabilities' parameter rules), down to
the body its adapter builds: the reasoning models and the Claude 4.1 / 4.5 / 4.6 models of
issue 26, their dated snapshots, and unknown models (which get everything)."""

from __future__ import annotations

import pytest

from evalsite.core.plan import plan_cells
from evalsite.core.providers import build_provider
from evalsite.core.providers.base import Request
from evalsite.core.providers.capabilities import fit, param_rules
from evalsite.core.suites import parse_suite
from tests.helpers.providers import ENV

SAMPLING = {"temperature": 0, "top_p": 0.9, "stop": ("###",), "max_tokens": 300}
OPENAI_REASONING = (
    "openai/o3",
    "openai/o3-2025-04-16",
    "openai/o4-mini",
    "openai/gpt-5",
    "openai/gpt-5-mini",
    "openai/gpt-5-nano",
    "openai/gpt-5-2025-08-07",
)
CLAUDE_NOT_BOTH = (
    "anthropic/claude-opus-4-1",
    "anthropic/claude-opus-4-1-20250805",
    "anthropic/claude-sonnet-4-5",
    "anthropic/claude-sonnet-4-5-20250929",
    "anthropic/claude-haiku-4-5",
    "anthropic/claude-opus-4-5",
    "anthropic/claude-opus-4-6",
    "anthropic/claude-sonnet-4-6",
)


def body(model: str, params: dict, explicit: frozenset[str] = frozenset()) -> dict:
    """The body `model`'s adapter builds for a request made from `params`, as every entry
    point makes it (Request.from_params)."""
    request = Request.from_params(
        model, [{"role": "user", "content": "Hi"}], params, explicit=explicit
    )
    provider = build_provider(model, env=ENV)
    return provider.body(provider.prepare(request))


@pytest.mark.parametrize("model", OPENAI_REASONING)
def test_an_openai_reasoning_model_is_sent_no_temperature_top_p_or_stop(model):
    sent = body(model, SAMPLING)
    assert not {"temperature", "top_p", "stop", "max_tokens"} & set(sent)
    assert sent["max_completion_tokens"] == 300


def test_o1_keeps_its_stop_sequences():
    sent = body("openai/o1", SAMPLING)
    assert "temperature" not in sent and "top_p" not in sent
    assert sent["stop"] == ["###"]


def test_a_reasoning_model_takes_the_default_temperature_of_1():
    assert fit("openai/o3", {"temperature": 1}).sent == {"temperature": 1}
    left = fit("openai/o3", {"temperature": 0}).left_out
    assert left == {"temperature": "takes no temperature other than 1"}


@pytest.mark.parametrize("model", ("openai/gpt-5-chat-latest", "openai/gpt-4o", "openai/gpt-4.1"))
def test_a_chat_model_keeps_every_sampling_parameter(model):
    sent = body(model, SAMPLING)
    assert (sent["temperature"], sent["top_p"], sent["stop"]) == (0, 0.9, ["###"])


@pytest.mark.parametrize(
    "model",
    (
        "anthropic/claude-opus-4-7",
        "anthropic/claude-opus-4-8",
        "anthropic/claude-opus-4-8-20260601",
        "anthropic/claude-opus-5",
        "anthropic/claude-sonnet-5",
        "anthropic/claude-fable-5",
    ),
)
def test_a_claude_model_without_sampling_parameters_is_sent_neither(model):
    # From Opus 4.7 on, Anthropic answers 400 "temperature is deprecated for this model"
    # to a request that sets temperature (or top_p) at all.
    sent = body(model, SAMPLING)
    assert "temperature" not in sent and "top_p" not in sent
    assert sent["stop_sequences"] == ["###"]
    assert fit(model, SAMPLING).left_out == {
        "temperature": "takes no temperature",
        "top_p": "takes no top_p",
    }


def test_the_4_5_and_4_6_claude_models_keep_one_sampling_parameter():
    for model in ("anthropic/claude-sonnet-4-5", "anthropic/claude-opus-4-6"):
        assert "temperature" in body(model, SAMPLING)


@pytest.mark.parametrize("model", CLAUDE_NOT_BOTH)
def test_a_claude_model_that_refuses_both_is_sent_temperature_only(model):
    sent = body(model, SAMPLING)
    assert sent["temperature"] == 0 and "top_p" not in sent
    assert sent["stop_sequences"] == ["###"]
    assert fit(model, SAMPLING).left_out == {"top_p": "takes temperature or top_p, not both"}


@pytest.mark.parametrize("model", CLAUDE_NOT_BOTH)
def test_a_claude_model_keeps_the_explicit_one_of_the_two(model):
    sent = body(model, SAMPLING, explicit=frozenset({"top_p"}))
    assert sent["top_p"] == 0.9 and "temperature" not in sent


@pytest.mark.parametrize(
    "model", ("anthropic/claude-sonnet-4-20250514", "anthropic/claude-3-7-sonnet-latest")
)
def test_older_claude_models_take_both(model):
    sent = body(model, SAMPLING)
    assert (sent["temperature"], sent["top_p"]) == (0, 0.9)


def test_claude_takes_temperature_up_to_1():
    left = fit("anthropic/claude-3-5-haiku-latest", {"temperature": 1.5}).left_out
    assert left == {"temperature": "takes temperature from 0 to 1, not 1.5"}


@pytest.mark.parametrize(
    "model", ("openai/some-new-model", "anthropic/claude-next", "google/gemini-9", "fake/x")
)
def test_an_unknown_model_gets_every_sampling_parameter(model):
    params = {"temperature": 0, "top_p": 0.9, "stop": ("###",)}
    assert fit(model, params).sent == params


def test_openrouter_models_follow_their_vendor():
    assert "temperature" not in fit("openrouter/openai/o3", SAMPLING).sent
    assert fit("openrouter/openai/o3", {"reasoning_effort": "high"}).left_out == {}


def test_the_token_limit_field_is_the_adapters():
    assert param_rules("openai/o3").limit_field == "max_completion_tokens"
    assert param_rules("anthropic/claude-sonnet-4-5").limit_field == "max_tokens"
    assert param_rules("google/gemini-2.5-pro").limit_field == "maxOutputTokens"


SUITE = b"""
suite: issue-26
version: 1
defaults: {temperature: 0, top_p: 0.9, stop: ["###"], max_tokens: 300}
tasks:
  - id: t
    prompt: "Hi"
    cases: [{id: c}]
"""


@pytest.mark.parametrize("model", (*OPENAI_REASONING, *CLAUDE_NOT_BOTH))
def test_a_suite_with_sampling_defaults_plans_bodies_the_model_accepts(model):
    suite = parse_suite(SUITE, filename="s.yaml", origin="upload")
    (cell,) = plan_cells(suite, [model], repeats=1)
    provider = build_provider(model, env=ENV)
    sent = provider.body(provider.prepare(cell.request))
    if model.startswith("openai/"):
        assert not {"temperature", "top_p", "stop"} & set(sent)
    else:
        assert "top_p" not in sent and sent["temperature"] == 0


def test_a_thinking_block_without_a_budget_is_left_out_not_a_crash():
    fitted = fit("anthropic/claude-sonnet-4-5", {"thinking": {"type": "enabled"}})
    assert "thinking" not in fitted.sent
    assert fitted.left_out["thinking"].startswith("takes thinking.budget_tokens")
