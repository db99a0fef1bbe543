"""Reasoning controls as suite parameters (issue 26): reasoning_effort and thinking's
budget_tokens are validated, sent only to models that take them, in the cache key, and
priced as output; a parameter a contestant sets explicitly that its model refuses is an
error at its line, a suite default one a note."""

from __future__ import annotations

from decimal import Decimal

import pytest

from evalsite.core.plan import plan_cells, request_hash
from evalsite.core.pricing import PriceRow, call_cost
from evalsite.core.providers import build_provider
from evalsite.core.providers.anthropic import _usage as anthropic_usage
from evalsite.core.providers.base import Request
from evalsite.core.providers.capabilities import fit
from evalsite.core.providers.google import _usage as google_usage
from evalsite.core.providers.openai import _usage as openai_usage
from evalsite.core.suite_params import parameter_notes
from evalsite.core.suites import SuiteError, parse_suite
from tests.helpers.providers import ENV, SCHEMA

HI = [{"role": "user", "content": "Hi"}]


def suite_of(text: str):
    return parse_suite(text.encode(), filename="s.yaml", origin="upload")


def errors_of(text: str) -> list[str]:
    with pytest.raises(SuiteError) as info:
        suite_of(text)
    return [str(problem) for problem in info.value.problems]


def sent(model: str, params: dict, **fields) -> dict:
    request = Request.from_params(model, HI, params, **fields)
    provider = build_provider(model, env=ENV)
    return provider.body(provider.prepare(request))


def suite_text(defaults: str, *, models: str = "[]", variants: str = "", judge: str = "") -> str:
    return f"""suite: r
version: 1
defaults: {defaults}
models: {models}
{variants}
{judge}
tasks:
  - id: t
    prompt: "Hi"
    cases: [{{id: c}}]
"""


# --- sent only to models that take them ------------------------------------------------


@pytest.mark.parametrize("model", ("openai/o3", "openai/o4-mini", "openai/gpt-5"))
def test_reasoning_effort_goes_to_openai_reasoning_models(model):
    assert sent(model, {"reasoning_effort": "high"})["reasoning_effort"] == "high"


def test_minimal_effort_is_for_gpt_5_only():
    assert sent("openai/gpt-5-mini", {"reasoning_effort": "minimal"})["reasoning_effort"]
    left = fit("openai/o3", {"reasoning_effort": "minimal"}).left_out
    assert left == {"reasoning_effort": "takes reasoning_effort low, medium or high, not 'minimal'"}


@pytest.mark.parametrize("model", ("openai/gpt-4o", "openai/o1-mini", "openai/o1-preview"))
def test_a_model_without_reasoning_effort_is_not_sent_it(model):
    assert "reasoning_effort" not in sent(model, {"reasoning_effort": "low"})
    assert fit(model, {"reasoning_effort": "low"}).left_out == {
        "reasoning_effort": "takes no reasoning_effort"
    }


@pytest.mark.parametrize(
    "model",
    ("anthropic/claude-sonnet-4-5-20250929", "anthropic/claude-opus-4-1",
     "anthropic/claude-3-7-sonnet-latest", "anthropic/claude-sonnet-4-20250514"),
)  # fmt: skip
def test_extended_thinking_goes_to_claude_with_its_sampling_rules(model):
    params = {"thinking": {"budget_tokens": 2048}, "max_tokens": 4096, "temperature": 0}
    body = sent(model, params | {"top_p": 0.5})
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 4096
    assert "temperature" not in body and "top_p" not in body
    notes = fit(model, params | {"top_p": 0.5}).left_out
    assert notes["temperature"] == "with thinking, takes temperature 1 only"
    assert notes["top_p"] in (
        "with thinking, takes top_p from 0.95 to 1",
        "takes temperature or top_p, not both",
    )


def test_claude_with_thinking_keeps_top_p_from_0_95():
    params = {"thinking": {"budget_tokens": 2048}, "max_tokens": 4096, "top_p": 0.97}
    assert sent("anthropic/claude-sonnet-4-20250514", params)["top_p"] == 0.97


def test_claude_with_thinking_answers_a_schema_prompted():
    """Extended thinking refuses a forced tool call, evalsite's native schema mode."""
    params = {"thinking": {"budget_tokens": 2048}, "max_tokens": 4096}
    body = sent("anthropic/claude-sonnet-4-5", params, schema=SCHEMA)
    assert "tool_choice" not in body and "tools" not in body
    assert "tool_choice" in sent("anthropic/claude-sonnet-4-5", {}, schema=SCHEMA)


def test_thinking_is_left_out_for_a_claude_without_it_and_below_1024():
    params = {"thinking": {"budget_tokens": 2048}, "max_tokens": 4096}
    assert "thinking" not in sent("anthropic/claude-3-5-haiku-latest", params)
    small = {"thinking": {"budget_tokens": 512}, "max_tokens": 4096}
    assert fit("anthropic/claude-sonnet-4-5", small).left_out == {
        "thinking": "takes thinking.budget_tokens from 1024, not 512"
    }


def test_gemini_2_5_gets_the_budget_as_its_thinking_config():
    params = {"thinking": {"budget_tokens": 1024}, "max_tokens": 4096}
    config = sent("google/gemini-2.5-flash", params)["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingBudget": 1024}
    assert config["maxOutputTokens"] == 4096
    off = sent("google/gemini-2.5-flash", {"thinking": {"budget_tokens": 0}, "max_tokens": 9})
    assert off["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 0}
    assert fit("google/gemini-2.5-pro", {"thinking": {"budget_tokens": 0}}).left_out == {
        "thinking": "takes thinking.budget_tokens from 128 to 32768, not 0"
    }
    assert "generationConfig" not in sent(
        "google/gemini-2.0-flash", {"thinking": {"budget_tokens": 9}}
    )


def test_openai_is_never_sent_a_thinking_budget():
    params = {"thinking": {"budget_tokens": 2048}, "max_tokens": 4096}
    assert "thinking" not in sent("openai/o3", params)


# --- validated ------------------------------------------------------------------------


def test_a_suite_takes_the_reasoning_parameters_at_every_layer():
    text = suite_text(
        "{reasoning_effort: high, thinking: {budget_tokens: 2048}, max_tokens: 8000}",
        variants="variants: {quick: {params: {reasoning_effort: low}}}",
    )
    assert suite_of(text).defaults["reasoning_effort"] == "high"


def test_an_unknown_effort_and_a_thinking_without_a_budget_are_refused_at_their_keys():
    errors = errors_of(suite_text("{reasoning_effort: extreme, thinking: {}, max_tokens: 10}"))
    assert any("defaults.reasoning_effort" in e for e in errors)
    assert any("defaults.thinking" in e and "budget_tokens" in e for e in errors)


@pytest.mark.parametrize("limit", ("", ", max_tokens: 2048"))
def test_a_thinking_budget_needs_max_tokens_above_it(limit):
    (error,) = errors_of(suite_text(f"{{thinking: {{budget_tokens: 2048}}{limit}}}"))
    assert "s.yaml:3" in error and "defaults.thinking.budget_tokens" in error
    assert "max_tokens above it" in error


# --- explicit settings are errors, defaults notes ---------------------------------------


def test_a_default_the_model_does_not_take_is_a_note_per_contestant_and_parameter():
    suite = suite_of(suite_text("{temperature: 0, top_p: 0.9, stop: ['###']}"))
    notes = parameter_notes(suite, ["openai/o3", "anthropic/claude-sonnet-4-5", "openai/gpt-4o"])
    assert [(n.contestant, n.param) for n in notes] == [
        ("openai/o3", "temperature"),
        ("openai/o3", "top_p"),
        ("openai/o3", "stop"),
        ("anthropic/claude-sonnet-4-5", "top_p"),
    ]
    assert str(notes[0]) == (
        "openai/o3 will not be sent temperature 0 (set at defaults.temperature): "
        "openai/o3 takes no temperature other than 1"
    )


def test_a_variant_setting_what_its_model_refuses_is_an_error_at_its_line():
    text = suite_text(
        "{max_tokens: 100}",
        models="[openai/gpt-4o@cold, openai/o3@cold]",
        variants="variants: {cold: {params: {temperature: 0}}}",
    )
    (error,) = errors_of(text)
    assert error.startswith("s.yaml:5")
    assert "variants.cold.params.temperature" in error
    assert "openai/o3@cold: openai/o3 takes no temperature other than 1" in error


def test_a_variant_setting_both_for_claude_4_5_is_an_error():
    text = suite_text(
        "{max_tokens: 100}",
        models="[anthropic/claude-haiku-4-5@both]",
        variants="variants: {both: {params: {temperature: 0.2, top_p: 0.8}}}",
    )
    (error,) = errors_of(text)
    assert "takes temperature or top_p, not both" in error


def test_the_judges_own_temperature_is_an_error_for_a_reasoning_judge():
    (error,) = errors_of(suite_text("{}", judge="judge: {model: openai/o3, temperature: 0}"))
    assert "judge.temperature" in error and "openai/o3 takes no temperature other than 1" in error
    suite_of(suite_text("{}", judge="judge: {model: openai/o3}"))  # its default is left out


def test_the_judge_is_sent_no_default_temperature_it_does_not_take():
    from evalsite.core.suite_params import judge_params

    suite = suite_of(suite_text("{}", judge="judge: {model: openai/o3}"))
    params, explicit = judge_params(suite, default_max_tokens=400)
    request = Request.from_params("openai/o3", HI, params, explicit=explicit)
    assert request.temperature is None and request.max_tokens == 400


# --- cached by what was sent, priced as output -----------------------------------------


def _hash(request: Request) -> str:
    return request_hash(request, provider="openai", adapter_version="openai-1", mode=None)


def test_the_cache_key_covers_the_reasoning_parameters_and_no_other_key_moves():
    plain = Request.from_params("openai/o3", HI, {})
    high = Request.from_params("openai/o3", HI, {"reasoning_effort": "high"})
    low = Request.from_params("openai/o3", HI, {"reasoning_effort": "low"})
    assert len({_hash(plain), _hash(high), _hash(low)}) == 3
    assert "reasoning_effort" not in plain.to_json()  # keys of other requests are as before
    assert Request(**high.to_json()) == high  # a stored call's request reads back whole


def test_a_left_out_default_moves_the_cache_key_to_what_is_sent():
    suite = suite_of(suite_text("{temperature: 0}"))
    (cell,) = plan_cells(suite, ["openai/o3"], repeats=1)
    assert cell.request.temperature is None
    unsent = Request.from_params("openai/o3", cell.request.messages, {}, task_id="t", case_id="c")
    assert _hash(cell.request) == _hash(unsent)


def test_reasoning_and_thinking_tokens_are_counted_and_priced_as_output():
    row = PriceRow("x/y", Decimal("1"), Decimal("10"))
    openai = openai_usage(
        {
            "prompt_tokens": 10,
            "completion_tokens": 900,
            "completion_tokens_details": {"reasoning_tokens": 800},
        }
    )
    anthropic = anthropic_usage({"input_tokens": 10, "output_tokens": 900})  # thinking included
    google = google_usage(
        {"promptTokenCount": 10, "candidatesTokenCount": 100, "thoughtsTokenCount": 800}
    )
    for usage in (openai, anthropic, google):
        assert usage.output_tokens == 900
        assert call_cost(row, usage) == Decimal("0.00901")
