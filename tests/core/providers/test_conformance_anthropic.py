"""The Messages API adapter against the official anthropic SDK's own types.

Bodies are built through the provider's public path (``complete`` against a mock transport)
and checked against ``MessageCreateParamsNonStreaming``, the SDK's type of the request body,
with no key the type does not name (:mod:`tests.core.providers.sdk_types`). Replies are the
SDK's ``Message`` serialised as the API sends it, parsed by the adapter.
"""

from __future__ import annotations

import json
import typing
from typing import Any

import httpx
import pytest

from evalsite.core.judge_warnings import CUT_OFF_REASONS
from evalsite.core.pricing import Usage
from evalsite.core.providers import ErrorKind, build_provider
from tests.core.providers.sdk_types import (
    CONVERSATION,
    SUITE_DEFAULTS,
    answer,
    conforms,
    failure,
    media,
    media_part,
    named_error,
    problems,
    sent_body,
    sent_for_suite,
)
from tests.helpers.providers import ENV, SCHEMA, call, make_request, sent_json
from tests.helpers.references import Deferred

# The SDK, imported by the first test that uses it (tests/helpers/references.py).
sdk = Deferred("anthropic.types")
request_types = Deferred("anthropic.types.message_create_params")

MODEL = "anthropic/claude-sonnet-4-5"
# The SDK's request type names no sampling parameter since its 1.0 (its MIGRATION.md:
# "removed deprecated request parameters", sent through extra_body since). The API takes
# them under the anthropic-version evalsite sends, 2023-06-01, on the models that honour
# them; from version 2026-10-21 (the SDK 2.x default) any of them is a 400 on every model.
SAMPLING = {"temperature": float, "top_p": float}
BODIES: dict[str, dict[str, Any]] = {
    "system and user": {},
    "no system": {"messages": ({"role": "user", "content": "I was charged twice."},)},
    "sampling parameters": {"temperature": 0, "max_tokens": 300, "stop": ("\n\n", "END")},
    "top_p": {"top_p": 0.9},
    "multi-turn": {"messages": CONVERSATION},
    "image, PDF and text document": {
        "messages": media(media_part("scan"), media_part("receipt"), media_part("notes"))
    },
    "native schema": {"schema": SCHEMA},
    "prompted schema": {"schema": {"type": "array", "items": {"type": "string"}}},
}


def reply(
    *content: sdk.TextBlock | sdk.ToolUseBlock,
    stop_reason: str = "end_turn",
    usage: sdk.Usage | None = None,
    exclude_none: bool = True,
) -> httpx.Response:
    """A Message built with the SDK's types, as the API sends it."""
    message = sdk.Message(
        id="msg_conformance",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5-20250929",
        content=list(content) or [sdk.TextBlock(type="text", text="Billing.")],
        stop_reason=stop_reason,
        stop_sequence=None,
        usage=usage or sdk.Usage(input_tokens=19, output_tokens=3),
    )
    return httpx.Response(200, json=message.model_dump(mode="json", exclude_none=exclude_none))


@pytest.mark.parametrize("case", BODIES)
def test_every_body_is_a_messages_request_of_the_sdk(case):
    conforms(
        sent_body(MODEL, reply(), **BODIES[case]),
        request_types.MessageCreateParamsNonStreaming,
        beyond=SAMPLING,
    )


def test_sampling_parameters_go_only_under_the_api_version_that_takes_them():
    request = make_request(MODEL, temperature=0, top_p=0.9)
    _, sent = call(build_provider(MODEL, env=ENV), request, reply())
    assert set(SAMPLING) & set(sent_json(sent))
    assert sent.headers["anthropic-version"] == "2023-06-01"


def test_the_check_refuses_what_the_sdk_does_not_name():
    body = sent_body(MODEL, reply()) | {"stop": ["END"]}
    body["messages"][0]["content"] = [{"type": "text", "txt": "I was charged twice."}]
    assert problems(body, request_types.MessageCreateParamsNonStreaming) == [
        "body.stop: not a field of MessageCreateParamsNonStreaming",
        "body.messages[0].content[0].txt: not a field of TextBlockParam",
        "body.messages[0].content[0].text: required by TextBlockParam",
    ]


def test_system_messages_go_top_level_and_stop_as_stop_sequences():
    body = sent_body(MODEL, reply(), messages=CONVERSATION, stop=("END",))
    assert body["system"] == "You triage support tickets."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["stop_sequences"] == ["END"]


def test_a_native_schema_is_one_forced_tool_of_the_sdk():
    body = sent_body(MODEL, reply(), schema=SCHEMA)
    assert body["tools"][0]["input_schema"] == SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": body["tools"][0]["name"]}


@pytest.mark.parametrize("exclude_none", [True, False])
def test_a_sdk_message_parses_into_its_text_usage_finish_and_model(exclude_none):
    completion = answer(MODEL, reply(exclude_none=exclude_none))
    assert completion.text == "Billing."
    assert completion.usage == Usage(input_tokens=19, output_tokens=3)
    assert completion.finish_reason == "end_turn"
    assert completion.provider_model == "claude-sonnet-4-5-20250929"


def test_cache_reads_are_cached_input_and_cache_writes_plain_input():
    usage = sdk.Usage(
        input_tokens=100,
        cache_creation_input_tokens=50,
        cache_read_input_tokens=800,
        output_tokens=40,
    )
    completion = answer(MODEL, reply(usage=usage))
    assert completion.usage == Usage(input_tokens=150, output_tokens=40, cached_input_tokens=800)


def test_the_forced_tool_calls_input_is_the_answer_in_native_mode():
    tool = sdk.ToolUseBlock(
        type="tool_use", id="toolu_01", name="reply", input={"category": "billing"}
    )
    completion = answer(MODEL, reply(tool, stop_reason="tool_use"), schema=SCHEMA)
    assert json.loads(completion.text) == {"category": "billing"}
    assert completion.schema_mode == "native"


# The SDK's stop reasons but refusal, written out so that collecting this module does not
# import the SDK; the first test holds the list to the SDK's own.
ANSWERED = [
    "end_turn",
    "max_tokens",
    "stop_sequence",
    "tool_use",
    "pause_turn",
    "model_context_window_exceeded",
]


def test_the_answered_stop_reasons_are_every_stop_reason_of_the_sdk_but_refusal():
    assert sorted([*ANSWERED, "refusal"]) == sorted(typing.get_args(sdk.StopReason))


@pytest.mark.parametrize("stop_reason", ANSWERED)
def test_every_stop_reason_but_refusal_with_text_is_an_answer_with_its_finish(stop_reason):
    completion = answer(
        MODEL, reply(sdk.TextBlock(type="text", text="Billing."), stop_reason=stop_reason)
    )
    assert completion.finish_reason == stop_reason


@pytest.mark.parametrize("model", ["claude-opus-4-1", "claude-sonnet-4-5", "claude-opus-4-6"])
def test_a_claude_4_body_for_a_suites_defaults_sends_one_of_temperature_and_top_p(model):
    body = sent_for_suite(f"anthropic/{model}", reply(), SUITE_DEFAULTS)
    conforms(body, request_types.MessageCreateParamsNonStreaming, beyond=SAMPLING)
    assert len(set(SAMPLING) & set(body)) == 1
    assert body["stop_sequences"] == ["END"]


def test_extended_thinking_is_the_sdks_thinking_config():
    params = {"max_tokens": 4096, "thinking": {"budget_tokens": 2048}}
    body = sent_for_suite(MODEL, reply(), params)
    conforms(body, request_types.MessageCreateParamsNonStreaming, beyond=SAMPLING)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] > body["thinking"]["budget_tokens"]


def test_a_schema_with_thinking_is_prompted_not_a_forced_tool():
    params = {"max_tokens": 4096, "thinking": {"budget_tokens": 2048}}
    body = sent_for_suite(MODEL, reply(), params, schema=SCHEMA)
    conforms(body, request_types.MessageCreateParamsNonStreaming, beyond=SAMPLING)
    assert "tool_choice" not in body and "tools" not in body


def test_thinking_blocks_are_not_the_answer():
    thinking = sdk.ThinkingBlock(type="thinking", thinking="A double charge.", signature="sig")
    completion = answer(MODEL, reply(thinking, sdk.TextBlock(type="text", text="Billing.")))
    assert completion.text == "Billing."


def test_a_refusal_stop_is_a_refusal_with_its_usage_whatever_came_before():
    completion = answer(
        MODEL, reply(sdk.TextBlock(type="text", text="Here is how"), stop_reason="refusal")
    )
    assert completion.text == "" and completion.refusal
    assert completion.usage == Usage(input_tokens=19, output_tokens=3)


# Each error as the API sends it: status, the SDK's type of the error object and its fields,
# headers, and the kind evalsite makes of it. Built with the SDK's types when a test asks.
ERRORS: dict[str, tuple[int, str, dict[str, str], dict[str, str], ErrorKind]] = {
    "invalid request": (
        400, "InvalidRequestErrorObject",
        {"type": "invalid_request_error",
         "message": "`temperature` and `top_p` cannot both be specified for this model."},
        {}, ErrorKind.BAD_REQUEST,
    ),
    "invalid key": (
        401, "AuthenticationErrorObject",
        {"type": "authentication_error", "message": "invalid x-api-key"},
        {}, ErrorKind.AUTH,
    ),
    "no permission": (
        403, "PermissionErrorObject",
        {"type": "permission_error", "message": "Your API key does not have permission."},
        {}, ErrorKind.AUTH,
    ),
    "unknown model": (
        404, "NotFoundErrorObject",
        {"type": "not_found_error", "message": "model: claude-9"},
        {}, ErrorKind.UNKNOWN_MODEL,
    ),
    "rate limited": (
        429, "RateLimitErrorObject",
        {"type": "rate_limit_error", "message": "Rate limited."},
        {"retry-after": "12"}, ErrorKind.RATE_LIMITED,
    ),
    "overloaded": (
        529, "OverloadedErrorObject",
        {"type": "overloaded_error", "message": "Overloaded"},
        {"retry-after": "3"}, ErrorKind.SERVER,
    ),
    "server error": (
        500, "APIErrorObject",
        {"type": "api_error", "message": "Internal server error"},
        {}, ErrorKind.SERVER,
    ),
}  # fmt: skip


def error_reply(case: str) -> httpx.Response:
    """The case's error reply, its body the SDK's ErrorResponse, as the API sends it."""
    status, kind_of_object, fields, headers, _ = ERRORS[case]
    body = sdk.ErrorResponse(
        type="error", error=getattr(sdk, kind_of_object)(**fields), request_id="req_conformance"
    )
    return httpx.Response(status, json=body.model_dump(mode="json"), headers=headers)


@pytest.mark.parametrize("case", ERRORS)
def test_an_sdk_error_body_is_its_error_kind_quoting_the_providers_message(case):
    named_error(MODEL, error_reply(case), ERRORS[case][-1])


@pytest.mark.parametrize(("case", "seconds"), [("rate limited", 12), ("overloaded", 3)])
def test_a_rate_limit_or_overload_is_retried_after_the_providers_retry_after(case, seconds):
    error = failure(MODEL, error_reply(case))
    assert error.retryable and error.retry_after == seconds


def test_an_invalid_request_stops_the_model_without_a_retry():
    error = failure(MODEL, error_reply("invalid request"))
    assert error.stops_model and not error.retryable


@pytest.mark.parametrize(
    "stop_reason",
    ["max_tokens", "model_context_window_exceeded"],
)
def test_a_stop_at_a_limit_keeps_its_text_and_is_counted_cut_off(stop_reason):
    assert stop_reason in typing.get_args(sdk.StopReason)
    completion = answer(
        MODEL, reply(sdk.TextBlock(type="text", text="The charge was"), stop_reason=stop_reason)
    )
    assert completion.text == "The charge was"
    assert completion.finish_reason in CUT_OFF_REASONS
