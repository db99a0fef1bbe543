"""Anthropic Messages API (``POST https://api.anthropic.com/v1/messages``).

Request: ``x-api-key`` and ``anthropic-version: 2023-06-01`` headers; system messages are
joined into the top-level ``system``; ``max_tokens`` is required by the API, so
:data:`DEFAULT_MAX_TOKENS` is sent when the request sets none; ``stop`` goes as
``stop_sequences``.

Media (Anthropic's vision and PDF-support guides): a message whose content is a list of
parts goes as a list of content blocks, in the order written: text as
``{"type": "text", "text"}``; an image as ``{"type": "image", "source": {"type":
"base64", "media_type", "data"}}``; a PDF as ``{"type": "document", "source": {"type":
"base64", "media_type": "application/pdf", "data"}}``; a plain-text file as a document
whose source is ``{"type": "text", "media_type": "text/plain", "data": <the text>}``. The
API takes no audio or video: such a part is ``config``. A message whose content is text
goes as text, as it always did (same body, same cache key).

Native schema mode is a forced tool call: one tool named :data:`TOOL_NAME` whose
``input_schema`` is the schema and ``tool_choice {"type": "tool", "name": TOOL_NAME}``;
the answer text is ``json.dumps`` of the tool_use block's ``input``. The API requires an
object at the top of ``input_schema``, so a schema whose top-level type is not "object"
goes prompted, and so does every schema of a request with extended thinking, which
refuses a forced tool call.

Extended thinking: a request's ``thinking_budget`` goes as ``thinking {"type": "enabled",
"budget_tokens"}`` (the suite's ``thinking.budget_tokens``; the validation holds it at 1024
or more and below ``max_tokens``, and the request was made without a temperature other
than 1 or a top_p under 0.95, :mod:`evalsite.core.providers.capabilities`). The thinking
is billed as output and counted in ``output_tokens``.

Reply: a ``refusal`` stop reason is a refusal (:func:`refused`, its usage kept) whatever
text came before it: the classifier stopped the answer, so that text is not one.

Usage: Anthropic's ``input_tokens`` excludes cache reads and cache writes. Cache reads
become ``cached_input_tokens``; cache writes (only with ``cache_control``, which evalsite
never sends) are added to ``input_tokens`` and so priced at the plain input rate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalsite.core.pricing import Usage
from evalsite.core.providers.base import Completion, Request, completion, refused
from evalsite.core.providers.http_json import HttpAdapter, dig_list, optional_str, token_counts

URL = "https://api.anthropic.com/v1/messages"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
TOOL_NAME = "reply"
TOOL_DESCRIPTION = "Give your answer by calling this tool; its input is the answer."


class AnthropicProvider(HttpAdapter):
    name = "anthropic"
    version = "anthropic-1"

    def native_schema(self, request: Request) -> bool:
        """A forced tool call, but not with thinking: extended thinking refuses one."""
        if request.thinking_budget is not None:
            return False
        return request.schema is not None and request.schema.get("type") == "object"

    def url(self, request: Request) -> str:
        return URL

    def headers(self) -> dict[str, str]:
        return {
            "x-api-key": self._api_key or "",
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
        }

    def body(self, request: Request) -> dict[str, Any]:
        """The Messages API body for ``request`` (already prepared)."""
        system = self.system_text(request)
        body: dict[str, Any] = {
            "model": request.model_name,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": [
                {"role": m["role"], "content": self._content(m["content"])}
                for m in request.messages
                if m["role"] != "system"
            ],
        }
        if system:
            body["system"] = system
        optional = {"temperature": request.temperature, "top_p": request.top_p}
        body |= {key: value for key, value in optional.items() if value is not None}
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if request.thinking_budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": request.thinking_budget}
        if self.schema_mode(request) == "native":
            assert request.schema is not None
            tool = {"name": TOOL_NAME, "description": TOOL_DESCRIPTION}
            body["tools"] = [tool | {"input_schema": dict(request.schema)}]
            body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return body

    def _content(self, content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
        if isinstance(content, str):
            return content
        return [self._block(part) for part in content]

    def _block(self, part: Mapping[str, Any]) -> dict[str, Any]:
        """One part as a Messages API content block."""
        kind, media_type = part["type"], part.get("media_type")
        if kind == "text":
            return {"type": "text", "text": part["text"]}
        if kind == "image":
            source = {"type": "base64", "media_type": media_type}
            return {"type": "image", "source": source | {"data": self.media_base64(part)}}
        if kind == "file" and media_type == "application/pdf":
            source = {"type": "base64", "media_type": media_type}
            return {"type": "document", "source": source | {"data": self.media_base64(part)}}
        if kind == "file" and media_type == "text/plain":
            source = {"type": "text", "media_type": media_type, "data": self.media_text(part)}
            return {"type": "document", "source": source}
        raise self.unsendable(part, "the Messages API takes images, PDFs and plain text")

    def parse(self, data: dict[str, Any], request: Request) -> Completion:
        """Text blocks joined, or in native mode the forced tool call's input as JSON."""
        blocks = [b for b in dig_list(data, "content", provider=self.name) if isinstance(b, dict)]
        mode = self.schema_mode(request)
        tool_inputs = [
            b["input"] for b in blocks if b.get("type") == "tool_use" and b.get("name") == TOOL_NAME
        ]
        if mode == "native" and tool_inputs:
            text = json.dumps(tool_inputs[0], ensure_ascii=False)
        else:
            text = "".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")
        reply: dict[str, Any] = {
            "usage": _usage(data.get("usage")),
            "finish_reason": optional_str(data.get("stop_reason")),
            "schema_mode": mode,
            "provider_model": optional_str(data.get("model")),
        }
        if reply["finish_reason"] == "refusal":
            return refused("stop reason refusal", **reply)
        return completion(text, provider=self.name, **reply)


def _usage(block: Any) -> Usage | None:
    if not isinstance(block, dict):
        return None
    counts = token_counts(
        block,
        "input_tokens",
        "cache_creation_input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
    )
    if counts is None:
        return None
    fresh, written, output, read = counts
    return Usage(input_tokens=fresh + written, output_tokens=output, cached_input_tokens=read)
