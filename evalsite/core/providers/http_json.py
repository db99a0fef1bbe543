"""The JSON POST every HTTP adapter makes, through the one HTTP seam
(:mod:`~evalsite.core.providers.http_clients`), and helpers for reading provider replies.

The call is bounded by the request's ``timeout_s`` as a whole (connect, send, wait, read):
running out of it is ``timeout`` (unless the deadline passed while the process was stopped:
then a reply that arrived meanwhile is read); a URL without http(s) is ``config``; a
connection refused, reset or dropped is ``network``. A reply's status and body are mapped to
error kinds by :mod:`~evalsite.core.providers.http_errors`; a 2xx whose body is not a JSON
object is ``malformed``, and so is a reply of any status over
:data:`~evalsite.core.providers.base.MAX_REPLY_BYTES` (read no further).

Media parts: an adapter reads a part's bytes when it builds the body
(:meth:`HttpAdapter.media_bytes`), from the run's blob store when it was given one and
holds them, else from the part's ``source``; bytes that are not the ones the part's hash
names are ``config`` (never sent, never retried). A part the API cannot take is ``config``
too (:meth:`HttpAdapter.unsendable`), not ``bad_request``: it is one task's part, and the
model's other calls should still be made.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from evalsite.core.media import BlobStore, MediaError, read_part
from evalsite.core.pricing import MAX_USAGE_TOKENS
from evalsite.core.providers.base import (
    MAX_REPLY_BYTES,
    Completion,
    ErrorKind,
    ProviderError,
    Request,
    message_media,
    message_text,
    over_reply_cap,
    scrub,
)
from evalsite.core.providers.http_clients import HttpFailure
from evalsite.core.providers.http_errors import SNIPPET_CHARS, error_from_body
from evalsite.core.providers.prompted import SchemaModes

if TYPE_CHECKING:
    from evalsite.core.providers.http_clients import HttpClient

__all__ = [
    "HttpAdapter",
    "over_http",
    "dig",
    "dig_list",
    "optional_str",
    "token_counts",
    "post_json",
]


class HttpAdapter(SchemaModes):
    """An adapter that POSTs JSON: subclasses give the URL, headers, body and parsing.

    The key is held privately and never shown by ``repr``; it is scrubbed from every error.
    ``blobs`` is the run's content-addressed store, where media parts are read first.
    """

    name: str
    version: str

    def __init__(self, api_key: str | None, blobs: BlobStore | None = None) -> None:
        self._api_key = api_key or None
        self.blobs = blobs

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.version}>"

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self._api_key,) if self._api_key else ()

    def url(self, request: Request) -> str:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def body(self, request: Request) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, data: dict[str, Any], request: Request) -> Completion:
        raise NotImplementedError

    def media_base64(self, part: Mapping[str, Any]) -> str:
        """A media part's bytes in base64 (see :meth:`media_bytes`)."""
        return base64.b64encode(self.media_bytes(part)).decode("ascii")

    def media_text(self, part: Mapping[str, Any]) -> str:
        """A ``text/plain`` part's text (UTF-8, as sniffing found it)."""
        return self.media_bytes(part).decode("utf-8", "replace")

    def media_bytes(self, part: Mapping[str, Any]) -> bytes:
        """A media part's bytes; ProviderError(CONFIG) when they are not the bytes its hash
        names (the file changed or went away since the run was planned)."""
        try:
            return read_part(part, self.blobs)
        except MediaError as error:
            raise ProviderError(ErrorKind.CONFIG, f"{self.name}: {error}") from None

    def unsendable(self, part: Mapping[str, Any], takes: str) -> ProviderError:
        """The error for a part this API cannot take (validation should have refused it)."""
        what = f"{part.get('type')} '{part.get('name', '?')}' ({part.get('media_type')})"
        return ProviderError(ErrorKind.CONFIG, f"{self.name}: cannot send the {what}: {takes}")

    def system_text(self, request: Request) -> str:
        """The system messages' texts joined by blank lines (see :meth:`system_message`)."""
        return "\n\n".join(
            self.system_message(m) for m in request.messages if m["role"] == "system"
        )

    def system_message(self, message: Mapping[str, Any]) -> str:
        """A system message's text: it carries text only (a suite's system message is
        rendered as one text), so a media part in one is ``config``."""
        media = message_media(message)
        if media:
            raise self.unsendable(media[0], "a system message carries text only")
        return message_text(message)

    async def complete(self, request: Request, client: HttpClient) -> Completion:
        """Send the prepared request and parse the reply; raises ProviderError."""
        request = self.prepare(request)
        data = await post_json(
            client,
            self.url(request),
            headers=self.headers(),
            body=self.body(request),
            timeout_s=request.timeout_s,
            provider=self.name,
            secrets=self.secrets,
        )
        return self.parse(data, request)


def over_http(providers: Iterable[object]) -> bool:
    """Does any of `providers` (None for a judge a run has not) make its calls over HTTP?"""
    return any(isinstance(provider, HttpAdapter) for provider in providers)


async def post_json(
    client: HttpClient,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    timeout_s: float,
    provider: str,
    secrets: Iterable[str] = (),
) -> dict[str, Any]:
    """POST ``body`` as JSON and return the reply's JSON object, or raise ProviderError.

    ``timeout_s`` bounds the whole call (connect, send, wait and read), not each step.
    """
    secrets = tuple(secrets)
    try:
        reply = await client.fetch(
            "POST",
            url,
            headers={**headers, "content-type": "application/json"},
            body=json_bytes(body),
            timeout_s=timeout_s,
            max_bytes=MAX_REPLY_BYTES,
            too_big=lambda: over_reply_cap(f"{provider}: the reply"),
        )
    except HttpFailure as failure:
        raise ProviderError(failure.kind, scrub(f"{provider}: {failure.reason}", secrets)) from None
    text = reply.text()
    data = _json_object(text)
    if not 200 <= reply.status < 300:
        raise error_from_body(reply.status, data, text, reply.headers, provider, secrets)
    if data is None:
        snippet = scrub(text[:SNIPPET_CHARS], secrets)
        message = f"{provider}: the reply is not a JSON object: {snippet!r}"
        raise ProviderError(ErrorKind.MALFORMED, message, status=reply.status)
    return data


def json_bytes(body: Mapping[str, Any]) -> bytes:
    """The JSON a request sends: compact, UTF-8, no NaN (the bytes httpx's ``json=`` sent)."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def dig(data: Any, *path: str | int, provider: str) -> Any:
    """``data[path[0]][path[1]]…``, or ProviderError(MALFORMED) naming the missing field."""
    current = data
    for depth, step in enumerate(path):
        if not _has(current, step):
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[: depth + 1])
            message = f"{provider}: the reply has no {where.lstrip('.')}"
            raise ProviderError(ErrorKind.MALFORMED, message)
        current = current[step]
    return current


def dig_list(data: Any, *path: str | int, provider: str) -> list[Any]:
    """Like :func:`dig`, and the value must be a list."""
    value = dig(data, *path, provider=provider)
    if not isinstance(value, list):
        where = ".".join(str(part) for part in path)
        raise ProviderError(ErrorKind.MALFORMED, f"{provider}: {where} in the reply is not a list")
    return value


def optional_str(value: Any) -> str | None:
    """``value`` if it is text, else None (finish reasons and model ids are optional)."""
    return value if isinstance(value, str) else None


def _has(container: Any, step: str | int) -> bool:
    if isinstance(step, int):
        return isinstance(container, list) and 0 <= step < len(container)
    return isinstance(container, Mapping) and step in container


def token_counts(block: Mapping[str, Any], *paths: str) -> list[int] | None:
    """The token counts at ``paths`` in a usage block (a path is keys joined by dots,
    ``prompt_tokens_details.cached_tokens``), in order: 0 where a count is absent or not a
    number, at most :data:`~evalsite.core.pricing.MAX_USAGE_TOKENS` (a larger one, even
    1e400, is counted as that). None when any is negative or NaN: a usage the provider got
    wrong is no usage, so the call's cost is unknown rather than $0."""
    counts = [_count(block, path.split(".")) for path in paths]
    return None if None in counts else [count for count in counts if count is not None]


def _count(block: Any, keys: list[str]) -> int | None:
    value = block
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not value >= 0:  # negative, or NaN (which no comparison holds for)
        return None
    return int(min(value, MAX_USAGE_TOKENS))
