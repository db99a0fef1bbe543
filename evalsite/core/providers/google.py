"""Google Gemini API ``generateContent``.

``POST https://generativelanguage.googleapis.com/v1beta/models/{model}:generateContent``
with the key ONLY in the ``x-goog-api-key`` header, never in the URL (FIELD-NOTES "Keys":
an error that quotes the URL would otherwise carry the key).

Request: ``contents`` of ``{role: user|model, parts: [{text}]}``, system messages joined
into ``systemInstruction``, and ``generationConfig`` with ``temperature``, ``topP``,
``maxOutputTokens`` and ``stopSequences``, and ``thinkingConfig {"thinkingBudget"}`` for a
request with a thinking budget (the suite's ``thinking.budget_tokens``; Gemini 2.5 only,
:mod:`evalsite.core.providers.capabilities`). Native schema mode (always, with a schema):
``responseMimeType: application/json`` and ``responseJsonSchema`` (standard JSON Schema).

Media: a message whose content is a list of parts sends one part each, in the order
written: ``{"text"}``, and every file (image, PDF, plain text, audio, video) inline as
``{"inlineData": {"mimeType", "data": <base64>}}``. That spelling is the API reference's
JSON for ``Part`` and ``Blob`` (and the JavaScript samples of the media guides), camelCase
like every other field sent here; the guides' curl samples write ``inline_data`` and
``mime_type``, which the JSON API accepts as well. MP3 goes as ``audio/mp3``, the type the
audio guide lists (evalsite calls it ``audio/mpeg``). Inline data may total 20 MB a
request (the Files API, which evalsite does not use, takes more): a larger request is the
API's 400. A message whose content is text goes as one text part, as it always did (same
body, same cache key).

Reply: the first candidate's text parts joined (thought parts skipped); ``finishReason``.
A prompt blocked by ``promptFeedback.blockReason`` (no candidate), or a candidate with no
text stopped by a content filter (:data:`FILTER_FINISHES`), is a refusal (:func:`refused`,
its usage kept); any other candidate with no text is an empty answer. Usage:
``promptTokenCount`` includes ``cachedContentTokenCount``, so the cached part is
subtracted; ``thoughtsTokenCount`` is billed as output and added to ``candidatesTokenCount``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from evalsite.core.pricing import Usage
from evalsite.core.providers.base import (
    Completion,
    ErrorKind,
    ProviderError,
    Request,
    completion,
    refused,
)
from evalsite.core.providers.http_json import HttpAdapter, optional_str, token_counts

BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
ROLE = {"user": "user", "assistant": "model"}
MIME_TYPES = {"audio/mpeg": "audio/mp3"}  # the audio guide lists MP3 as audio/mp3
# The finishReason values of a policy filter (google.genai.types.FinishReason): with no
# text, the reply is a refusal.
FILTER_FINISHES = frozenset(
    {"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY",
     "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "MODEL_ARMOR"}
)  # fmt: skip


class GoogleProvider(HttpAdapter):
    name = "google"
    version = "google-1"

    def native_schema(self, request: Request) -> bool:
        return request.schema is not None

    def url(self, request: Request) -> str:
        return f"{BASE_URL}/models/{quote(request.model_name, safe='-._')}:generateContent"

    def headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._api_key or "", "content-type": "application/json"}

    def body(self, request: Request) -> dict[str, Any]:
        """The generateContent body for ``request`` (already prepared)."""
        contents = [
            {"role": ROLE[m["role"]], "parts": self._parts(m["content"])}
            for m in request.messages
            if m["role"] != "system"
        ]
        body: dict[str, Any] = {"contents": contents}
        system = self.system_text(request)
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        config: dict[str, Any] = {
            "temperature": request.temperature,
            "topP": request.top_p,
            "maxOutputTokens": request.max_tokens,
            "stopSequences": list(request.stop) or None,
        }
        config = {key: value for key, value in config.items() if value is not None}
        if request.thinking_budget is not None:
            config["thinkingConfig"] = {"thinkingBudget": request.thinking_budget}
        if self.schema_mode(request) == "native":
            assert request.schema is not None
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = dict(request.schema)
        if config:
            body["generationConfig"] = config
        return body

    def _parts(self, content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
        if isinstance(content, str):
            return [{"text": content}]
        return [self._part(part) for part in content]

    def _part(self, part: Mapping[str, Any]) -> dict[str, Any]:
        if part["type"] == "text":
            return {"text": part["text"]}
        mime = MIME_TYPES.get(part["media_type"], part["media_type"])
        return {"inlineData": {"mimeType": mime, "data": self.media_base64(part)}}

    def parse(self, data: dict[str, Any], request: Request) -> Completion:
        """The first candidate's text; a blocked prompt or a filtered candidate with no text
        is a refusal, no candidate at all is empty."""
        reply: dict[str, Any] = {
            "usage": _usage(data.get("usageMetadata")),
            "schema_mode": self.schema_mode(request),
            "provider_model": optional_str(data.get("modelVersion")),
        }
        candidates = data.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            if reason := _block_reason(data):
                return refused(f"prompt blocked: {reason}", finish_reason=None, **reply)
            raise self._no_candidate(data)
        first = candidates[0] if isinstance(candidates[0], Mapping) else {}
        content = first.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        text = "".join(_text(part) for part in parts) if isinstance(parts, list) else ""
        finish = optional_str(first.get("finishReason"))
        if not text.strip() and finish in FILTER_FINISHES:
            return refused(f"finish reason {finish}", finish_reason=finish, **reply)
        return completion(text, provider=self.name, finish_reason=finish, **reply)

    def _no_candidate(self, data: Mapping[str, Any]) -> ProviderError:
        if "candidates" in data or "usageMetadata" in data:
            return ProviderError(ErrorKind.EMPTY, f"{self.name}: the reply has no candidate")
        return ProviderError(ErrorKind.MALFORMED, f"{self.name}: the reply has no candidates")


def _block_reason(data: Mapping[str, Any]) -> str | None:
    feedback = data.get("promptFeedback")
    reason = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
    return reason if isinstance(reason, str) and reason else None


def _text(part: Any) -> str:
    """A part's text; thought summaries and non-text parts give ""."""
    if not isinstance(part, Mapping) or part.get("thought"):
        return ""
    text = part.get("text")
    return text if isinstance(text, str) else ""


def _usage(block: Any) -> Usage | None:
    if not isinstance(block, Mapping):
        return None
    counts = token_counts(
        block,
        "promptTokenCount",
        "cachedContentTokenCount",
        "candidatesTokenCount",
        "thoughtsTokenCount",
    )
    if counts is None:
        return None
    prompt, cached, output, thoughts = counts
    cached = min(prompt, cached)
    return Usage(
        input_tokens=prompt - cached, output_tokens=output + thoughts, cached_input_tokens=cached
    )
