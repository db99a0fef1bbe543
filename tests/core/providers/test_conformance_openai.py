"""The Chat Completions adapter against the official openai SDK's own types.

Bodies are built through the provider's public path (``complete`` against a mock transport)
and checked against ``CompletionCreateParamsNonStreaming``, the SDK's type of the request
body, with no key the type does not name (:mod:`tests.core.providers.sdk_types`). Replies
are the SDK's ``ChatCompletion`` serialised as the API sends it, parsed by the adapter.
"""

from __future__ import annotations

import typing
from typing import Any

import httpx
import pytest

from evalsite.core.judge_warnings import CUT_OFF_REASONS
from evalsite.core.pricing import Usage
from evalsite.core.providers import ErrorKind, ProviderError
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
from tests.helpers.providers import SCHEMA
from tests.helpers.references import Deferred

# The SDK, imported by the first test that uses it (tests/helpers/references.py).
chat = Deferred("openai.types.chat")
completion_usage = Deferred("openai.types.completion_usage")
shared = Deferred("openai.types.shared")

MODEL = "openai/gpt-4.1-mini"
LOOSE_SCHEMA = {"type": "object", "properties": {"category": {"type": "string"}}}


BODIES: dict[str, tuple[str, dict[str, Any]]] = {
    "system and user": (MODEL, {}),
    "sampling parameters": (
        MODEL,
        {"temperature": 0, "top_p": 0.9, "max_tokens": 300, "stop": ("\n\n", "END")},
    ),
    "one stop sequence": (MODEL, {"stop": "END"}),
    "multi-turn": (MODEL, {"messages": CONVERSATION}),
    "image and PDF": (
        "openai/gpt-4o",
        {"messages": media(media_part("scan"), media_part("receipt"))},
    ),
    "WAV audio": ("openai/gpt-4o-audio-preview", {"messages": media(media_part("call"))}),
    "native schema": (MODEL, {"schema": SCHEMA}),
    "prompted schema": (MODEL, {"schema": LOOSE_SCHEMA}),
    "compatible server": ("openrouter/meta-llama/llama-3.3-70b", {"max_tokens": 300}),
    "reasoning effort": ("openai/o3", {"reasoning_effort": "low", "max_tokens": 2000}),
    "compatible server, reasoning effort": (
        "openrouter/openai/o3",
        {"reasoning_effort": "low", "max_tokens": 2000},
    ),
    "compatible server, media": (
        "openrouter/openai/gpt-4o",
        {"messages": media(media_part("scan"), media_part("receipt"))},
    ),
}


def reply(
    content: str | None = "Billing.",
    *,
    finish_reason: str = "stop",
    refusal: str | None = None,
    usage: completion_usage.CompletionUsage | None = None,
    exclude_none: bool = True,
) -> httpx.Response:
    """A ChatCompletion built with the SDK's types, as the API sends it."""
    completion = chat.ChatCompletion(
        id="chatcmpl-conformance",
        object="chat.completion",
        created=1741569952,
        model="gpt-4.1-mini-2025-04-14",
        choices=[
            chat.chat_completion.Choice(
                index=0,
                finish_reason=finish_reason,
                message=chat.ChatCompletionMessage(
                    role="assistant", content=content, refusal=refusal
                ),
            )
        ],
        usage=usage
        or completion_usage.CompletionUsage(prompt_tokens=19, completion_tokens=3, total_tokens=22),
    )
    return httpx.Response(200, json=completion.model_dump(mode="json", exclude_none=exclude_none))


@pytest.mark.parametrize("case", BODIES)
def test_every_body_is_a_chat_completions_request_of_the_sdk(case):
    model, fields = BODIES[case]
    conforms(
        sent_body(model, reply(), **fields),
        chat.completion_create_params.CompletionCreateParamsNonStreaming,
    )


def test_the_check_refuses_what_the_sdk_does_not_name():
    body = sent_body(MODEL, reply(), messages=media(media_part("scan")))
    image = body["messages"][1]["content"][1]
    image["image_url"]["detial"] = "low"
    body["max_output_tokens"] = 300
    assert problems(body, chat.completion_create_params.CompletionCreateParamsNonStreaming) == [
        "body.max_output_tokens: not a field of CompletionCreateParamsNonStreaming",
        "body.messages[1].content[1].image_url.detial: not a field of ImageURL",
    ]


def test_openai_gets_max_completion_tokens_and_a_compatible_server_max_tokens():
    assert sent_body(MODEL, reply(), max_tokens=300)["max_completion_tokens"] == 300
    compatible = sent_body("openrouter/meta-llama/llama-3.3-70b", reply(), max_tokens=300)
    assert compatible["max_tokens"] == 300
    assert "max_completion_tokens" not in compatible


def test_a_strict_schema_is_the_sdks_json_schema_response_format():
    body = sent_body(MODEL, reply(), schema=SCHEMA)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True},
    }
    assert "response_format" not in sent_body(MODEL, reply(), schema=LOOSE_SCHEMA)


def test_media_parts_are_the_sdks_content_parts_in_order():
    body = sent_body(MODEL, reply(), messages=media(media_part("scan"), media_part("receipt")))
    kinds = [p["type"] for p in body["messages"][1]["content"]]
    assert kinds == ["text", "image_url", "file"]
    audio = sent_body("openai/gpt-4o-audio-preview", reply(), messages=media(media_part("call")))
    assert audio["messages"][1]["content"][1]["input_audio"]["format"] == "wav"


def test_an_assistant_messages_media_part_is_refused_as_config_not_sent():
    shown = {
        "role": "assistant",
        "content": [{"type": "text", "text": "84.20"}, media_part("scan")],
    }
    messages = (
        {"role": "user", "content": "The total?"},
        shown,
        {"role": "user", "content": "And?"},
    )
    with pytest.raises(ProviderError) as info:
        sent_body("openai/gpt-4o", reply(), messages=messages)
    assert info.value.kind is ErrorKind.CONFIG


def test_an_assistant_messages_text_parts_are_the_sdks_assistant_content():
    shown = {"role": "assistant", "content": [{"type": "text", "text": "84.20"}]}
    messages = (
        {"role": "user", "content": "The total?"},
        shown,
        {"role": "user", "content": "And?"},
    )
    conforms(
        sent_body(MODEL, reply(), messages=messages),
        chat.completion_create_params.CompletionCreateParamsNonStreaming,
    )


@pytest.mark.parametrize("exclude_none", [True, False])
def test_a_sdk_completion_parses_into_its_text_usage_finish_and_model(exclude_none):
    completion = answer(MODEL, reply(exclude_none=exclude_none))
    assert completion.text == "Billing."
    assert completion.usage == Usage(input_tokens=19, output_tokens=3)
    assert completion.finish_reason == "stop"
    assert completion.provider_model == "gpt-4.1-mini-2025-04-14"


def test_cached_prompt_tokens_are_split_out_and_reasoning_tokens_bill_as_output():
    usage = completion_usage.CompletionUsage(
        prompt_tokens=1000,
        completion_tokens=300,
        total_tokens=1300,
        prompt_tokens_details=completion_usage.PromptTokensDetails(
            cached_tokens=600, audio_tokens=0
        ),
        completion_tokens_details=completion_usage.CompletionTokensDetails(reasoning_tokens=256),
    )
    completion = answer("openai/o4-mini", reply(usage=usage))
    # completion_tokens already includes the reasoning tokens, which bill as output
    assert completion.usage == Usage(input_tokens=400, output_tokens=300, cached_input_tokens=600)


def test_a_length_finish_keeps_its_text_and_is_counted_cut_off():
    completion = answer(MODEL, reply("The charge was made tw", finish_reason="length"))
    assert (completion.text, completion.finish_reason) == ("The charge was made tw", "length")
    assert completion.finish_reason in CUT_OFF_REASONS


# The SDK's finish reasons, written out so that collecting this module does not import the
# SDK; the first test holds the list to the SDK's own.
FINISHES = ("stop", "length", "tool_calls", "content_filter", "function_call")


def test_the_finish_reasons_are_every_finish_reason_of_the_sdk():
    choice = chat.chat_completion.Choice
    assert typing.get_args(choice.model_fields["finish_reason"].annotation) == FINISHES


@pytest.mark.parametrize("finish_reason", FINISHES)
def test_every_finish_reason_of_the_sdk_with_text_is_an_answer_with_its_finish(finish_reason):
    completion = answer(MODEL, reply(finish_reason=finish_reason))
    assert (completion.text, completion.finish_reason) == ("Billing.", finish_reason)


@pytest.mark.parametrize(
    "model", ["openai/o3", "openai/o4-mini", "openai/gpt-5", "openai/gpt-5-mini"]
)
def test_a_reasoning_models_body_for_a_suites_defaults_is_a_request_of_the_sdk(model):
    body = sent_for_suite(model, reply(), SUITE_DEFAULTS | {"reasoning_effort": "high"})
    conforms(body, chat.completion_create_params.CompletionCreateParamsNonStreaming)
    assert body["reasoning_effort"] == "high"
    assert not {"temperature", "top_p", "stop"} & set(body)


def test_a_chat_models_body_for_a_suites_defaults_keeps_them_all():
    body = sent_for_suite(MODEL, reply(), SUITE_DEFAULTS)
    conforms(body, chat.completion_create_params.CompletionCreateParamsNonStreaming)
    assert (body["temperature"], body["top_p"], body["stop"]) == (0, 0.9, ["END"])


def test_a_refusal_with_no_content_is_a_refusal_with_its_usage():
    completion = answer(MODEL, reply(None, refusal="I can't help with that."))
    assert (completion.text, completion.refusal) == ("", "I can't help with that.")
    assert completion.usage == Usage(input_tokens=19, output_tokens=3)


def test_a_content_filter_finish_with_no_content_is_a_refusal():
    completion = answer(MODEL, reply(None, finish_reason="content_filter"))
    assert completion.refusal and "content_filter" in completion.refusal


# Each error as the API sends it: status, headers, the fields of the SDK's ErrorObject, and
# the kind evalsite makes of it. Built with the SDK's type when a test asks.
ERRORS: dict[str, tuple[int, dict[str, str], dict[str, Any], ErrorKind]] = {
    "unsupported parameter": (
        400, {},
        {"message": "Unsupported parameter: 'temperature' is not supported with this model.",
         "type": "invalid_request_error", "param": "temperature",
         "code": "unsupported_parameter"},
        ErrorKind.BAD_REQUEST,
    ),
    "invalid key": (
        401, {},
        {"message": "Incorrect API key provided.", "type": "invalid_request_error",
         "code": "invalid_api_key", "param": None},
        ErrorKind.AUTH,
    ),
    "unknown model": (
        404, {},
        {"message": "The model `o9` does not exist or you do not have access to it.",
         "type": "invalid_request_error", "code": "model_not_found", "param": None},
        ErrorKind.UNKNOWN_MODEL,
    ),
    "out of credit": (
        429, {},
        {"message": "You exceeded your current quota.", "type": "insufficient_quota",
         "code": "insufficient_quota", "param": None},
        ErrorKind.AUTH,
    ),
    "rate limited": (
        429, {"retry-after": "7"},
        {"message": "Rate limit reached.", "type": "requests", "code": "rate_limit_exceeded",
         "param": None},
        ErrorKind.RATE_LIMITED,
    ),
}  # fmt: skip


def error_reply(case: str) -> httpx.Response:
    """The case's error reply, its body the SDK's ErrorObject, as the API sends it."""
    status, headers, fields, _ = ERRORS[case]
    body = {"error": shared.ErrorObject(**fields).model_dump(mode="json")}
    return httpx.Response(status, json=body, headers=headers)


@pytest.mark.parametrize("case", ERRORS)
def test_an_sdk_error_body_is_its_error_kind_quoting_the_providers_message(case):
    named_error(MODEL, error_reply(case), ERRORS[case][-1])


def test_an_unsupported_parameter_names_it_and_stops_the_model_without_a_retry():
    error = failure(MODEL, error_reply("unsupported parameter"))
    assert "temperature" in error.message
    assert error.stops_model and not error.retryable


def test_a_rate_limit_waits_the_providers_retry_after():
    error = failure(MODEL, error_reply("rate limited"))
    assert error.retryable and error.retry_after == 7
