"""The Gemini adapter against the official google-genai SDK's own types.

Bodies are built through the provider's public path (``complete`` against a mock transport).
The SDK has no type for the generateContent body as a whole, so its parts are read by the
SDK's models of them, which refuse unknown fields: ``contents`` as ``Content``,
``systemInstruction`` as ``Content`` and ``generationConfig`` as ``GenerationConfig``
(the REST object; the SDK's ``GenerateContentConfig`` merges it with the request's other
fields). Each must come back the same when the model writes it out by its JSON names, so a
snake_case key or a value of another type fails too. Replies are the SDK's
``GenerateContentResponse`` serialised as the API sends it, parsed by the adapter.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from evalsite.core.judge_warnings import CUT_OFF_REASONS
from evalsite.core.pricing import Usage
from tests.core.providers.sdk_types import (
    CONVERSATION,
    SUITE_DEFAULTS,
    answer,
    media,
    media_part,
    sent_body,
    sent_for_suite,
)
from tests.helpers.providers import SCHEMA
from tests.helpers.references import Deferred

# The SDK, imported by the first test that uses it (tests/helpers/references.py).
types = Deferred("google.genai.types")

MODEL = "google/gemini-2.5-flash"
# The generateContent request body's fields (Gemini API reference, models.generateContent)
REQUEST_FIELDS = {
    "contents", "tools", "toolConfig", "safetySettings", "systemInstruction",
    "generationConfig", "cachedContent",
}  # fmt: skip
BODIES: dict[str, dict[str, Any]] = {
    "system and user": {},
    "sampling parameters": {"temperature": 0, "top_p": 0.9, "max_tokens": 300, "stop": ("END",)},
    "multi-turn": {"messages": CONVERSATION},
    "image, PDF, text, audio and video": {
        "messages": media(
            media_part("scan"),
            media_part("receipt"),
            media_part("notes"),
            media_part("call"),
            media_part("clip"),
        )
    },
    "native schema": {"schema": SCHEMA},
}


def read_back(model: type[types._common.BaseModel], value: dict[str, Any]) -> None:
    """Assert ``value`` reads as ``model`` and writes back the same by its JSON names."""
    parsed = model.model_validate_json(json.dumps(value), strict=True)
    assert parsed.model_dump(by_alias=True, exclude_none=True) == _bytes(value)


def _bytes(value: Any) -> Any:
    """``value`` with each inline ``data`` as the bytes it encodes, as the SDK holds them."""
    if isinstance(value, list):
        return [_bytes(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: _bytes(item) for key, item in value.items()}
    if isinstance(out.get("inlineData"), dict):
        out["inlineData"]["data"] = base64.b64decode(out["inlineData"]["data"], validate=True)
    return out


def reply(
    *parts: types.Part,
    finish_reason: str = "STOP",
    usage: types.GenerateContentResponseUsageMetadata | None = None,
) -> httpx.Response:
    """A GenerateContentResponse built with the SDK's types, as the API sends it."""
    response = types.GenerateContentResponse(
        candidates=[
            types.Candidate(
                content=types.Content(
                    role="model", parts=list(parts) or [types.Part(text="Billing.")]
                ),
                finish_reason=finish_reason,
                index=0,
            )
        ],
        usage_metadata=usage
        or types.GenerateContentResponseUsageMetadata(
            prompt_token_count=19, candidates_token_count=3, total_token_count=22
        ),
        model_version="gemini-2.5-flash",
        response_id="conformance",
    )
    return httpx.Response(
        200, json=response.model_dump(mode="json", by_alias=True, exclude_none=True)
    )


@pytest.mark.parametrize("case", BODIES)
def test_every_body_reads_as_the_sdks_content_and_generation_config(case):
    body = sent_body(MODEL, reply(), **BODIES[case])
    assert set(body) <= REQUEST_FIELDS
    for content in body["contents"]:
        read_back(types.Content, content)
    if "systemInstruction" in body:
        read_back(types.Content, body["systemInstruction"])
    if "generationConfig" in body:
        read_back(types.GenerationConfig, body["generationConfig"])


def test_the_check_refuses_a_field_the_sdk_does_not_name_or_spells_otherwise():
    config = sent_body(MODEL, reply(), temperature=0)["generationConfig"]
    with pytest.raises(ValueError, match="maxTokens"):
        read_back(types.GenerationConfig, config | {"maxTokens": 5})
    with pytest.raises(AssertionError):
        read_back(types.GenerationConfig, config | {"top_p": 0.5})


def test_the_sampling_parameters_are_the_sdks_generation_config():
    config = types.GenerationConfig.model_validate(
        sent_body(MODEL, reply(), **BODIES["sampling parameters"])["generationConfig"]
    )
    assert (config.temperature, config.top_p, config.max_output_tokens) == (0, 0.9, 300)
    assert config.stop_sequences == ["END"]


def test_a_schema_is_the_sdks_response_json_schema():
    config = types.GenerationConfig.model_validate(
        sent_body(MODEL, reply(), schema=SCHEMA)["generationConfig"]
    )
    assert config.response_mime_type == "application/json"
    assert config.response_json_schema == SCHEMA


def test_roles_are_user_and_model_and_the_system_goes_apart():
    body = sent_body(MODEL, reply(), messages=CONVERSATION)
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    system = types.Content.model_validate(body["systemInstruction"])
    assert system.parts[0].text == "You triage support tickets."


def test_a_sdk_response_parses_into_its_text_usage_finish_and_model():
    completion = answer(MODEL, reply())
    assert completion.text == "Billing."
    assert completion.usage == Usage(input_tokens=19, output_tokens=3)
    assert completion.finish_reason == "STOP"
    assert completion.provider_model == "gemini-2.5-flash"


def test_cached_tokens_are_split_out_and_thoughts_bill_as_output():
    usage = types.GenerateContentResponseUsageMetadata(
        prompt_token_count=1000,
        cached_content_token_count=600,
        candidates_token_count=40,
        thoughts_token_count=200,
        total_token_count=1240,
    )
    completion = answer(MODEL, reply(usage=usage))
    assert completion.usage == Usage(input_tokens=400, output_tokens=240, cached_input_tokens=600)


def test_thought_summaries_are_not_the_answer():
    thought = types.Part(text="The customer mentions a double charge.", thought=True)
    completion = answer(MODEL, reply(thought, types.Part(text="Billing.")))
    assert completion.text == "Billing."


# The SDK's finish reasons, written out so that collecting this module does not import the
# SDK; the first test holds the list to the SDK's own.
FINISHES = (
    "FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "LANGUAGE",
    "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "MALFORMED_FUNCTION_CALL",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_OTHER", "NO_IMAGE", "IMAGE_RECITATION",
    "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "MISSING_THOUGHT_SIGNATURE",
    "MALFORMED_RESPONSE", "ESCALATION", "PUP_LIMITED_DISABLED", "CONTINUATION", "MODEL_ARMOR",
)  # fmt: skip


def test_the_finish_reasons_are_every_finish_reason_of_the_sdk():
    assert tuple(reason.value for reason in types.FinishReason) == FINISHES


@pytest.mark.parametrize("finish_reason", FINISHES)
def test_every_finish_reason_of_the_sdk_with_text_is_an_answer_with_its_finish(finish_reason):
    completion = answer(MODEL, reply(types.Part(text="Billing."), finish_reason=finish_reason))
    assert (completion.text, completion.finish_reason) == ("Billing.", finish_reason)


@pytest.mark.parametrize("budget", [0, 1024])
def test_a_thinking_budget_is_the_sdks_thinking_config(budget):
    params = SUITE_DEFAULTS | {"thinking": {"budget_tokens": budget}}
    config = sent_for_suite(MODEL, reply(), params)["generationConfig"]
    read_back(types.GenerationConfig, config)
    assert types.GenerationConfig.model_validate(config).thinking_config.thinking_budget == budget


@pytest.mark.parametrize("finish_reason", ["SAFETY", "PROHIBITED_CONTENT", "RECITATION"])
def test_a_filtered_candidate_with_no_text_is_a_refusal_with_its_usage(finish_reason):
    completion = answer(MODEL, reply(types.Part(text=""), finish_reason=finish_reason))
    assert completion.text == "" and finish_reason in completion.refusal
    assert completion.usage == Usage(input_tokens=19, output_tokens=3)


def test_a_blocked_prompt_is_a_refusal_naming_the_block():
    response = types.GenerateContentResponse(
        prompt_feedback=types.GenerateContentResponsePromptFeedback(
            block_reason=types.BlockedReason.SAFETY
        ),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=19, total_token_count=19
        ),
    )
    blocked = httpx.Response(
        200, json=response.model_dump(mode="json", by_alias=True, exclude_none=True)
    )
    completion = answer(MODEL, blocked)
    assert completion.text == "" and "SAFETY" in completion.refusal


def test_a_max_tokens_finish_keeps_its_text_and_is_counted_cut_off():
    assert types.FinishReason.MAX_TOKENS.value == "MAX_TOKENS"
    completion = answer(MODEL, reply(types.Part(text="The charge was"), finish_reason="MAX_TOKENS"))
    assert completion.text == "The charge was"
    assert completion.finish_reason in CUT_OFF_REASONS
