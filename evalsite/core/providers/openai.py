"""OpenAI Chat Completions, and every OpenAI-compatible server (OpenRouter, admin endpoints).

``POST {base_url}/chat/completions`` with ``Authorization: Bearer <key>`` (no header when an
endpoint has no key). Messages go as they are, system messages included.

Media (OpenAI's image, audio and file-input guides; OpenRouter and the compatible servers
take the same parts): a message whose content is a list of parts goes as a list of content
parts, in the order written: ``{"type": "text", "text"}``; an image as ``{"type":
"image_url", "image_url": {"url": "data:<media type>;base64,…"}}``; WAV or MP3 audio as
``{"type": "input_audio", "input_audio": {"data": <base64>, "format": "wav"|"mp3"}}``; a
PDF as ``{"type": "file", "file": {"filename": "<name>.pdf", "file_data":
"data:application/pdf;base64,…"}}``. Chat Completions takes no video, no other audio format
and no file but a PDF: such a part is ``config``. A system message stays text. A message
whose content is text goes as text, as it always did (same body, same cache key).

- OpenAI itself (:func:`openai_provider`): the output limit is sent as
  ``max_completion_tokens``, which replaced the deprecated ``max_tokens`` and is the only
  one reasoning models accept; ``reasoning_effort`` when the request has one. What a model
  does not take (a reasoning model's temperature, top_p, stop) was left out of the request
  when it was made (:mod:`evalsite.core.providers.capabilities`). Native schema mode is
  ``response_format`` ``json_schema`` with ``strict: true``, used only when the schema is
  strict-compatible (:func:`strict_compatible`); any other schema goes prompted.
- OpenAI-compatible servers (:func:`compatible_provider`): ``max_tokens``, the field
  OpenRouter, vLLM and Ollama read; always prompted, since the server's schema support is
  unknown.

Usage: ``prompt_tokens`` includes the cached ``prompt_tokens_details.cached_tokens``, so
the cached part is subtracted to give the uncached ``input_tokens``. A ``refusal`` with no
content, or a ``content_filter`` finish with no content, is a refusal (:func:`refused`, its
usage kept); ``content_filter`` with content keeps the content. OpenRouter may answer 200
with an ``error`` object when the model fails mid-request; that is mapped like an HTTP
error with the code it carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalsite.core.media import BlobStore
from evalsite.core.pricing import Usage
from evalsite.core.providers.base import (
    Completion,
    ErrorKind,
    ProviderError,
    Request,
    completion,
    message_media,
    refused,
)
from evalsite.core.providers.http_errors import error_from_body
from evalsite.core.providers.http_json import HttpAdapter, dig, dig_list, optional_str, token_counts

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
SCHEMA_NAME = "reply"
AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}  # input_audio's two formats


class ChatCompletionsProvider(HttpAdapter):
    """One Chat Completions server: its name, base URL, key and dialect."""

    def __init__(
        self,
        *,
        name: str,
        base_url: str,
        api_key: str | None,
        native: bool,
        limit_field: str,
        version: str,
        blobs: BlobStore | None = None,
    ) -> None:
        super().__init__(api_key, blobs)
        self.name = name
        self.version = version
        self.base_url = base_url.rstrip("/")
        self._native = native
        self._limit_field = limit_field

    def native_schema(self, request: Request) -> bool:
        return self._native and request.schema is not None and strict_compatible(request.schema)

    def url(self, request: Request) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    def body(self, request: Request) -> dict[str, Any]:
        """The Chat Completions body for ``request`` (already prepared)."""
        body: dict[str, Any] = {
            "model": request.model_name,
            "messages": [self._message(m) for m in request.messages],
        }
        optional = {
            "temperature": request.temperature,
            "top_p": request.top_p,
            self._limit_field: request.max_tokens,
            "reasoning_effort": request.reasoning_effort,
        }
        body |= {key: value for key, value in optional.items() if value is not None}
        if request.stop:
            body["stop"] = list(request.stop)
        if self.schema_mode(request) == "native":
            assert request.schema is not None
            schema = {"name": SCHEMA_NAME, "schema": dict(request.schema), "strict": True}
            body["response_format"] = {"type": "json_schema", "json_schema": schema}
        return body

    def _message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        content = message["content"]
        if isinstance(content, str):
            return {"role": message["role"], "content": content}
        if message["role"] == "system":
            return {"role": "system", "content": self.system_message(message)}
        if message["role"] == "assistant" and (media := message_media(message)):
            raise self.unsendable(media[0], "an assistant message carries text only")
        return {"role": message["role"], "content": [self._part(part) for part in content]}

    def _part(self, part: Mapping[str, Any]) -> dict[str, Any]:
        """One part as a Chat Completions content part."""
        kind, media_type = part["type"], part.get("media_type")
        if kind == "text":
            return {"type": "text", "text": part["text"]}
        if kind == "image":
            url = f"data:{media_type};base64,{self.media_base64(part)}"
            return {"type": "image_url", "image_url": {"url": url}}
        if kind == "audio" and media_type in AUDIO_FORMATS:
            audio = {"data": self.media_base64(part), "format": AUDIO_FORMATS[media_type]}
            return {"type": "input_audio", "input_audio": audio}
        if kind == "file" and media_type == "application/pdf":
            data = f"data:{media_type};base64,{self.media_base64(part)}"
            return {"type": "file", "file": {"filename": f"{part['name']}.pdf", "file_data": data}}
        raise self.unsendable(part, "Chat Completions takes images, WAV or MP3 audio and PDF files")

    def parse(self, data: dict[str, Any], request: Request) -> Completion:
        """The first choice's content; usage with cached tokens split out."""
        if "error" in data and "choices" not in data:
            raise self._inline_error(data)
        choices = dig_list(data, "choices", provider=self.name)
        message = dig(choices, 0, "message", provider=self.name)
        if not isinstance(message, Mapping):
            raise ProviderError(
                ErrorKind.MALFORMED, f"{self.name}: choices[0].message is not an object"
            )
        finish = optional_str(choices[0].get("finish_reason"))
        text = _content_text(message.get("content"))
        reply: dict[str, Any] = {
            "usage": _usage(data.get("usage")),
            "finish_reason": finish,
            "schema_mode": self.schema_mode(request),
            "provider_model": optional_str(data.get("model")),
        }
        if not text.strip() and (reason := _refusal(message.get("refusal"), finish)):
            return refused(reason, **reply)
        return completion(text, provider=self.name, **reply)

    def _inline_error(self, data: dict[str, Any]) -> ProviderError:
        error = data["error"]
        code = error.get("code") if isinstance(error, Mapping) else None
        status = code if isinstance(code, int) and 400 <= code < 600 else 502
        return error_from_body(status, data, "", {}, self.name, self.secrets)


def _refusal(refusal: Any, finish: str | None) -> str | None:
    """Why a reply with no content was refused: the model's words, or the filter's finish."""
    if isinstance(refusal, str) and refusal.strip():
        return refusal
    return f"finish reason {finish}" if finish == "content_filter" else None


def _content_text(content: Any) -> str:
    """Content as text; a list of parts (some compatible servers) joins its text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, Mapping)]
        return "".join(part for part in parts if isinstance(part, str))
    return ""


def _usage(block: Any) -> Usage | None:
    if not isinstance(block, Mapping):
        return None
    counts = token_counts(
        block, "prompt_tokens", "prompt_tokens_details.cached_tokens", "completion_tokens"
    )
    if counts is None:
        return None
    prompt, cached, output = counts
    cached = min(prompt, cached)
    return Usage(input_tokens=prompt - cached, output_tokens=output, cached_input_tokens=cached)


def strict_compatible(schema: Mapping[str, Any]) -> bool:
    """True when OpenAI strict mode accepts ``schema`` as written.

    The root is an object; every object schema (anywhere: properties, items, anyOf, $defs…)
    sets ``additionalProperties: false`` and lists all of its properties in ``required``.
    """
    if schema.get("type") != "object":
        return False
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, Mapping):
            continue
        if not _strict_object(node):
            return False
        for key in ("items", "prefixItems", "anyOf", "allOf", "oneOf", "not"):
            stack.append(node.get(key))
        for key in ("properties", "$defs", "definitions"):
            children = node.get(key)
            stack.extend(children.values() if isinstance(children, Mapping) else ())
    return True


def _strict_object(node: Mapping[str, Any]) -> bool:
    types = node.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if not is_object and "properties" not in node:
        return True
    properties = node.get("properties") or {}
    required = node.get("required") or []
    return (
        node.get("additionalProperties") is False
        and isinstance(properties, Mapping)
        and set(properties) == set(required)
    )


def openai_provider(api_key: str | None, blobs: BlobStore | None = None) -> ChatCompletionsProvider:
    """OpenAI itself: native strict schemas where possible, ``max_completion_tokens``."""
    return ChatCompletionsProvider(
        name="openai",
        base_url=OPENAI_BASE_URL,
        api_key=api_key,
        native=True,
        limit_field="max_completion_tokens",
        version="openai-1",
        blobs=blobs,
    )


def compatible_provider(
    name: str, base_url: str, api_key: str | None, blobs: BlobStore | None = None
) -> ChatCompletionsProvider:
    """An OpenAI-compatible server (OpenRouter or an admin endpoint): prompted, ``max_tokens``."""
    return ChatCompletionsProvider(
        name=name,
        base_url=base_url,
        api_key=api_key,
        native=False,
        limit_field="max_tokens",
        version="openai-compatible-1",
        blobs=blobs,
    )
