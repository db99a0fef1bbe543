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
from anthropic.types import Message, StopReason, TextBlock, ToolUseBlock
from anthropic.types import Usage as SdkUsage
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

from evalsite.core.pricing import Usage
from evalsite.core.providers import build_provider
from tests.core.providers.conftest import ENV, SCHEMA, call, make_request, sent_json
from tests.core.providers.sdk_types import (
    CONVERSATION,
    answer,
    conforms,
    media,
    media_part,
    problems,
    sent_body,
)

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
    *content: TextBlock | ToolUseBlock,
    stop_reason: str = "end_turn",
    usage: SdkUsage | None = None,
    exclude_none: bool = True,
) -> httpx.Response:
    """A Message built with the SDK's types, as the API sends it."""
    message = Message(
        id="msg_conformance",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5-20250929",
        content=list(content) or [TextBlock(type="text", text="Billing.")],
        stop_reason=stop_reason,
        stop_sequence=None,
        usage=usage or SdkUsage(input_tokens=19, output_tokens=3),
    )
    return httpx.Response(200, json=message.model_dump(mode="json", exclude_none=exclude_none))


@pytest.mark.parametrize("case", BODIES)
def test_every_body_is_a_messages_request_of_the_sdk(case):
    conforms(
        sent_body(MODEL, reply(), **BODIES[case]), MessageCreateParamsNonStreaming, beyond=SAMPLING
    )


def test_sampling_parameters_go_only_under_the_api_version_that_takes_them():
    request = make_request(MODEL, temperature=0, top_p=0.9)
    _, sent = call(build_provider(MODEL, env=ENV), request, reply())
    assert set(SAMPLING) & set(sent_json(sent))
    assert sent.headers["anthropic-version"] == "2023-06-01"


def test_the_check_refuses_what_the_sdk_does_not_name():
    body = sent_body(MODEL, reply()) | {"stop": ["END"]}
    body["messages"][0]["content"] = [{"type": "text", "txt": "I was charged twice."}]
    assert problems(body, MessageCreateParamsNonStreaming) == [
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
    usage = SdkUsage(
        input_tokens=100,
        cache_creation_input_tokens=50,
        cache_read_input_tokens=800,
        output_tokens=40,
    )
    completion = answer(MODEL, reply(usage=usage))
    assert completion.usage == Usage(input_tokens=150, output_tokens=40, cached_input_tokens=800)


def test_the_forced_tool_calls_input_is_the_answer_in_native_mode():
    tool = ToolUseBlock(type="tool_use", id="toolu_01", name="reply", input={"category": "billing"})
    completion = answer(MODEL, reply(tool, stop_reason="tool_use"), schema=SCHEMA)
    assert json.loads(completion.text) == {"category": "billing"}
    assert completion.schema_mode == "native"


ANSWERED = [reason for reason in typing.get_args(StopReason) if reason != "refusal"]


@pytest.mark.parametrize("stop_reason", ANSWERED)
def test_every_stop_reason_but_refusal_with_text_is_an_answer_with_its_finish(stop_reason):
    completion = answer(
        MODEL, reply(TextBlock(type="text", text="Billing."), stop_reason=stop_reason)
    )
    assert completion.finish_reason == stop_reason
