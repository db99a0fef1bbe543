"""Schema modes shared by every adapter, and the one fixed "prompted" instruction.

A request with a schema is sent either *native* (the provider enforces the schema) or
*prompted* (the schema goes into the prompt). Prompted mode appends
``"\\n\\n" + schema_instruction(schema)`` to the last user message, or adds a user message
holding only the instruction when there is none. :func:`with_schema_instruction` is
idempotent, so the runner may call ``prepare()`` to hash what is sent and the adapter may
call it again inside ``complete()`` without doubling the instruction.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from evalsite.core.providers.base import CacheDefaults, Request

__all__ = ["SCHEMA_INSTRUCTION", "SchemaModes", "schema_instruction", "with_schema_instruction"]

SCHEMA_INSTRUCTION = "Reply with JSON only that satisfies this JSON Schema: "


def schema_instruction(schema: Mapping[str, Any]) -> str:
    """The fixed instruction followed by the schema as compact, key-sorted JSON."""
    return SCHEMA_INSTRUCTION + json.dumps(schema, sort_keys=True, ensure_ascii=False)


def with_schema_instruction(request: Request) -> Request:
    """``request`` with the schema instruction in its messages (unchanged without a schema)."""
    if request.schema is None:
        return request
    instruction = schema_instruction(request.schema)
    note = "\n\n" + instruction
    messages = list(request.messages)
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index]["content"]
        if messages[index]["role"] != "user":
            continue
        if not isinstance(content, str):  # parts: the instruction is one more text part
            if content and content[-1] == {"type": "text", "text": instruction}:
                return request
            content = [*content, {"type": "text", "text": instruction}]
            messages[index] = {"role": "user", "content": content}
            break
        if content == instruction or content.endswith(note):
            return request
        messages[index] = {"role": "user", "content": content + note}
        break
    else:
        messages.append({"role": "user", "content": instruction})
    return dataclasses.replace(request, messages=tuple(messages))


class SchemaModes(CacheDefaults):
    """``schema_mode`` and ``prepare`` from one question: can this request go native?

    Subclasses override :meth:`native_schema`; the default is always prompted.
    """

    def native_schema(self, request: Request) -> bool:
        return False

    def schema_mode(self, request: Request) -> str | None:
        """ "native", "prompted", or None when the request has no schema."""
        if request.schema is None:
            return None
        return "native" if self.native_schema(request) else "prompted"

    def prepare(self, request: Request) -> Request:
        """Prompted mode: the request with the instruction added; otherwise ``request``."""
        if self.schema_mode(request) == "prompted":
            return with_schema_instruction(request)
        return request
