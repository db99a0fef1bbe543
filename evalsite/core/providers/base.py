"""The provider contract: requests, completions, errors and the Provider protocol.

Every adapter takes a :class:`Request` and returns a :class:`Completion` or raises a
:class:`ProviderError`; nothing else escapes ``complete()``. Errors carry a kind the runner
acts on (retry, stop the model, record) and a message that has been scrubbed of key-shaped
strings by :func:`evalsite.core.keys.redact` and of any key the adapter holds.

Text that comes back from a provider is passed through :func:`clean_text`: JSON may carry
lone surrogates (``"\\ud800"`` is valid JSON) and NUL, which cannot be encoded as UTF-8 or
stored in PostgreSQL; each becomes U+FFFD.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from evalsite.core.keys import redact
from evalsite.core.media import KINDS, token_estimate
from evalsite.core.pricing import Usage
from evalsite.core.providers.capabilities import fit

if TYPE_CHECKING:
    from evalsite.core.providers.http_clients import HttpClient

__all__ = [
    "Completion", "ErrorKind", "Provider", "ProviderError", "Request", "ROLES",
    "MAX_REPLY_BYTES", "clean_text", "completion", "estimate_tokens", "message_media",
    "message_text", "over_reply_cap", "refused", "request_media", "scrub",
]  # fmt: skip

ROLES = ("system", "user", "assistant")
PURPOSES = ("answer", "judge")
MAX_MESSAGE_CHARS = 1000
# The most a reply may be, from any provider: an HTTP body (read no further) or a
# command's stdout. A larger reply is an error, never an answer.
MAX_REPLY_BYTES = 10 * 1024 * 1024
_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")


class ErrorKind(StrEnum):
    AUTH = "auth"
    BAD_REQUEST = "bad_request"
    RATE_LIMITED = "rate_limited"
    SERVER = "server"
    TIMEOUT = "timeout"
    MALFORMED = "malformed"
    EMPTY = "empty"
    NETWORK = "network"
    SCRIPTED = "scripted"
    CONFIG = "config"
    UNKNOWN_MODEL = "unknown_model"
    REFUSED = "refused"  # a row's kind only: a refusal is a Completion (its usage was billed)


RETRYABLE = frozenset(
    {ErrorKind.RATE_LIMITED, ErrorKind.SERVER, ErrorKind.TIMEOUT, ErrorKind.NETWORK}
)
STOPS_MODEL = frozenset({ErrorKind.AUTH, ErrorKind.BAD_REQUEST, ErrorKind.UNKNOWN_MODEL})


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate and NUL replaced by U+FFFD, so it encodes as UTF-8."""
    return _UNSTORABLE.sub("\ufffd", text)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without the given secret values (exact matches) and without key-shaped strings.

    Secrets shorter than 4 characters are left alone: replacing them would mangle the
    message and hide nothing.
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[REDACTED]")
    return redact(text)


def estimate_tokens(text: str) -> int:
    """A rough token count, characters ÷ 4 rounded up (0 for empty text)."""
    return (len(text) + 3) // 4


class ProviderError(Exception):
    """A call that produced no usable answer.

    ``message`` is always redacted and at most ``MAX_MESSAGE_CHARS`` long; ``status`` is the
    HTTP status when there was one; ``retry_after`` is seconds to wait (from ``Retry-After``
    or a documented body field), or None.
    """

    def __init__(
        self,
        kind: ErrorKind | str,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.kind = ErrorKind(kind)
        text = redact(clean_text(str(message)))
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[: MAX_MESSAGE_CHARS - 1] + "…"
        self.message = text
        self.status = status
        self.retry_after = retry_after
        super().__init__(text)

    @property
    def retryable(self) -> bool:
        """True for rate_limited, server, timeout and network errors."""
        return self.kind in RETRYABLE

    @property
    def stops_model(self) -> bool:
        """True for auth, bad_request and unknown_model: further calls to the same model
        would fail too."""
        return self.kind in STOPS_MODEL

    @property
    def stops_provider(self) -> bool:
        """True for an auth error that is the key's (a 401, an account out of credit, an
        invalid key), not a 403: no call with that key can succeed, to any model. A 403 may
        refuse one model and allow others, so it stops its model only."""
        return self.kind is ErrorKind.AUTH and self.status != 403

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_error, (self.kind, self.message, self.status, self.retry_after))

    def __repr__(self) -> str:
        return f"ProviderError({self.kind.value!r}, {self.message!r}, status={self.status!r})"


def _rebuild_error(
    kind: ErrorKind, message: str, status: int | None, retry_after: float | None
) -> ProviderError:
    return ProviderError(kind, message, status=status, retry_after=retry_after)


def over_reply_cap(source: str) -> ProviderError:
    """The error for a reply larger than :data:`MAX_REPLY_BYTES` (``source`` says whose)."""
    message = (
        f"{source} is over the 10 MiB reply cap ({MAX_REPLY_BYTES:,} bytes); "
        "evalsite stopped reading it"
    )
    return ProviderError(ErrorKind.MALFORMED, message)


@dataclass(frozen=True)
class Request:
    """One call: the full model string, the rendered messages and the sampling params.

    ``messages`` is normalised to a tuple of ``{"role", "content"}`` dicts (ValueError for
    an unknown role or a content that is neither text nor a list of parts); a part is
    ``{"type": "text", "text"}`` or a file reference (:mod:`evalsite.core.media`: ``type``
    image, file, audio or video, ``sha256``, ``media_type``, ``source``…); ``stop`` given
    as one string becomes a 1-tuple.
    ``order`` is 0 for answers and 1 or 2 for the two judge calls of a pair (order 1 shows
    the baseline as "Answer 1"); it keeps the two calls apart in hashes and scripted replies.
    ``attempt`` is 0, or i for the i-th extra judgement of a pair (``judge.consistency``):
    it enters the hash only when set, so it bypasses the cache without moving other keys.
    ``reasoning_effort`` and ``thinking_budget`` (a suite's ``thinking.budget_tokens``) are
    the reasoning controls; each enters :meth:`to_json` (and so the hash) only when set.
    """

    model: str
    messages: tuple[dict[str, str], ...]
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    timeout_s: float = 60
    schema: Mapping[str, Any] | None = None
    purpose: str = "answer"
    task_id: str = ""
    case_id: str = ""
    repeat: int = 0
    order: int = 0
    attempt: int = 0
    reasoning_effort: str | None = None
    thinking_budget: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", _normal_messages(self.messages))
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())
        object.__setattr__(self, "stop", stop)
        if self.purpose not in PURPOSES:
            raise ValueError(f"purpose must be one of {PURPOSES}, not {self.purpose!r}")

    def repeated(self, repeat: int) -> Request:
        """This request as another repeat of its case: equal to one made with ``repeat``,
        without normalising its messages again (a plan of 100,000 answers with repeats
        spent a third of its planning there). Its messages are this request's."""
        return self._with(repeat=repeat)

    def for_case(self, case_id: str, messages: Iterable[Mapping[str, Any]]) -> Request:
        """This request for another case of its task: equal to one made with the case's
        id and messages (what a contestant is sent besides them is the task's)."""
        return self._with(case_id=case_id, messages=_normal_messages(messages))

    def _with(self, **changes: Any) -> Request:
        """A copy with `changes`, which are already normal (no __post_init__ again)."""
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__, **changes)
        return copy

    @property
    def provider(self) -> str:
        """The provider part of the model string (``openai`` in ``openai/gpt-4o-mini``)."""
        return self.model.partition("/")[0]

    @property
    def model_name(self) -> str:
        """The model id sent to the provider: everything after the first ``/``."""
        return self.model.partition("/")[2]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-compatible values, stable for hashing; what the command adapter sends."""
        return {
            "model": self.model,
            "messages": [
                {"role": m["role"], "content": _json_content(m["content"])} for m in self.messages
            ],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_p": self.top_p,
            "stop": list(self.stop),
            "timeout_s": self.timeout_s,
            "schema": None if self.schema is None else json.loads(json.dumps(self.schema)),
            "purpose": self.purpose,
            "task_id": self.task_id,
            "case_id": self.case_id,
            "repeat": self.repeat,
            "order": self.order,
        } | self._set_only()

    def answer_json(self) -> dict[str, Any]:
        """:meth:`to_json` without ``timeout_s``: what decides the answer (waiting longer
        does not change it), read by the cache key and by the fake provider's seed."""
        data = self.to_json()
        del data["timeout_s"]
        return data

    def _set_only(self) -> dict[str, Any]:
        """The fields that enter the JSON (and the hash) only when set, so adding one moved
        no other request's key (a thinking budget of 0 is set: Gemini's "no thinking")."""
        fields = {
            "reasoning_effort": self.reasoning_effort,
            "thinking_budget": self.thinking_budget,
        }
        fields = {key: value for key, value in fields.items() if value is not None}
        return ({"attempt": self.attempt} if self.attempt else {}) | fields

    @classmethod
    def from_params(
        cls,
        model: str,
        messages: Iterable[dict[str, str]],
        params: Mapping[str, Any],
        *,
        explicit: Collection[str] = (),
        **fields: Any,
    ) -> Request:
        """A request from :func:`~evalsite.core.prompts.request_params` output plus ``fields``:
        every entry point's (answers, the judge's calls), so each model is sent the same.

        ``params`` are fitted to the model first (:func:`~evalsite.core.providers.
        capabilities.fit`: what it does not take is left out, a parameter named in
        ``explicit`` kept over a default it clashes with). Temperature, max_tokens, top_p,
        stop, timeout_s, reasoning_effort and thinking's budget_tokens are read.
        """
        sent = fit(model, params, explicit).sent
        known = ("temperature", "max_tokens", "top_p", "stop", "timeout_s", "reasoning_effort")
        picked = {key: sent[key] for key in known if key in sent}
        if isinstance(sent.get("thinking"), Mapping):
            picked["thinking_budget"] = sent["thinking"].get("budget_tokens")
        return cls(model=model, messages=tuple(messages), **(picked | fields))


def _normal_messages(messages: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    out = []
    for index, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise ValueError(f"messages[{index}].role must be one of {ROLES}, not {role!r}")
        if isinstance(content, list | tuple):
            content = [_normal_part(part, f"messages[{index}].content") for part in content]
        elif not isinstance(content, str):
            raise ValueError(f"messages[{index}].content must be text or a list of parts")
        out.append({"role": role, "content": content})
    return tuple(out)


def _normal_part(part: Any, where: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, Mapping) else None
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind in KINDS and isinstance(part.get("sha256"), str):
        return dict(part)
    raise ValueError(f"{where} has a part that is neither text nor a file reference: {part!r:.80}")


def message_text(message: Mapping[str, Any]) -> str:
    """A message's text: its content, or its text parts joined by blank lines."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n\n".join(part["text"] for part in content if part["type"] == "text")


def message_media(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A message's media parts (none for a text message)."""
    content = message["content"]
    return [] if isinstance(content, str) else [p for p in content if p["type"] in KINDS]


def request_media(request: Request) -> list[dict[str, Any]]:
    """Every media part a request sends, in order."""
    return [part for message in request.messages for part in message_media(message)]


def _json_content(content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    return content if isinstance(content, str) else [dict(part) for part in content]


@dataclass(frozen=True)
class Completion:
    """A usable answer. ``text`` is clean (see :func:`clean_text`) and not blank, unless
    ``refusal`` is set.

    ``usage`` is None when the provider reported none (cost unknown, never 0);
    ``schema_mode`` is "native", "prompted" or None (the request had no schema).
    ``refusal`` is why the model or the provider declined to answer (:func:`refused`): its
    text is "", its usage was billed; the runner records it as an error of kind
    ``refused``, never as an answer.
    """

    text: str
    usage: Usage | None
    finish_reason: str | None
    schema_mode: str | None
    simulated_latency_ms: int | None = None
    provider_model: str | None = None
    refusal: str | None = None


def refused(
    reason: str,
    *,
    usage: Usage | None,
    finish_reason: str | None,
    schema_mode: str | None,
    provider_model: str | None = None,
) -> Completion:
    """A refusal (OpenAI's ``refusal``, a ``refusal`` stop reason, a content filter or a
    blocked prompt with no text): a completion with no text, its usage kept, since it
    was billed, and ``reason`` (the model's words, or the finish or block reason)."""
    return Completion(
        text="",
        usage=usage,
        finish_reason=finish_reason,
        schema_mode=schema_mode,
        provider_model=provider_model,
        refusal=clean_text(reason.strip())[:MAX_MESSAGE_CHARS] or "refused",
    )


def completion(
    text: str,
    *,
    provider: str,
    usage: Usage | None,
    finish_reason: str | None,
    schema_mode: str | None,
    provider_model: str | None = None,
    simulated_latency_ms: int | None = None,
) -> Completion:
    """A Completion with clean text, or ProviderError(EMPTY) when the text is blank."""
    text = clean_text(text)
    if not text.strip():
        reason = f" (finish reason: {finish_reason})" if finish_reason else ""
        raise ProviderError(ErrorKind.EMPTY, f"{provider}: the reply has no text{reason}")
    return Completion(
        text=text,
        usage=usage,
        finish_reason=finish_reason,
        schema_mode=schema_mode,
        simulated_latency_ms=simulated_latency_ms,
        provider_model=provider_model,
    )


def estimated_completion(
    text: str,
    request: Request,
    *,
    provider: str,
    schema_mode: str | None,
    provider_model: str | None,
    simulated_latency_ms: int | None = None,
) -> Completion:
    """A completion from a provider that reports no usage (fake, scripted, command):
    tokens are estimated from characters, so a priced row can still cost the call."""
    chars = "".join(message_text(message) for message in request.messages)
    tokens_in = estimate_tokens(chars) + sum(map(token_estimate, request_media(request)))
    return completion(
        text,
        provider=provider,
        usage=Usage(input_tokens=tokens_in, output_tokens=estimate_tokens(text)),
        finish_reason="stop",
        schema_mode=schema_mode,
        provider_model=provider_model,
        simulated_latency_ms=simulated_latency_ms,
    )


@runtime_checkable
class Provider(Protocol):
    """What the runner calls. ``version`` is part of the cache key: bump it when the wire
    request for the same Request changes."""

    name: str
    version: str
    cacheable: bool  # False: every call is made afresh (the reply cannot be known ahead)
    waits: bool  # False: a call is answered in this process at once (nothing to wait on)

    def schema_mode(self, request: Request) -> str | None: ...

    def reply_source(self, request: Request) -> str | None: ...

    def output_token_limit(self, request: Request) -> int | None: ...

    def prepare(self, request: Request) -> Request: ...

    async def complete(self, request: Request, client: HttpClient) -> Completion: ...


class CacheDefaults:
    """What most providers say of the cache: their replies are cacheable, and the request
    (with the model) is all a reply depends on. A provider whose reply comes from elsewhere
    says what from (:meth:`reply_source`), and the cache key covers it."""

    cacheable = True
    waits = True  # on a network, a process or a simulated latency

    def reply_source(self, request: Request) -> str | None:
        return None

    def output_token_limit(self, request: Request) -> int | None:
        """The most output tokens a reply can report, when the provider knows better than
        ``max_tokens`` (a scripted or fake reply, a command's capped output); None: a model
        behind an API, trusted to keep to ``max_tokens`` (and stopped when it does not)."""
        return None
