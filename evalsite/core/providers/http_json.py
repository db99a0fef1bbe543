"""The one HTTP seam: a shared client, the JSON POST every HTTP adapter makes, and helpers
for reading provider replies.

Failures are mapped to error kinds by :mod:`~evalsite.core.providers.http_errors`; the call
itself is bounded by the request's ``timeout_s`` as a whole (connect, send, wait, read):
running out of it, or an ``httpx.TimeoutException``, is ``timeout`` (unless the deadline
passed while the process was stopped: then a reply that arrived meanwhile is read); a URL without
http(s) is ``config``; any other ``httpx.TransportError`` is ``network``; a 2xx whose body
is not a JSON object is ``malformed``, and so is a reply of any status over
:data:`~evalsite.core.providers.base.MAX_REPLY_BYTES` (read no further).

Media parts: an adapter reads a part's bytes when it builds the body
(:meth:`HttpAdapter.media_bytes`), from the run's blob store when it was given one and
holds them, else from the part's ``source``; bytes that are not the ones the part's hash
names are ``config`` (never sent, never retried). A part the API cannot take is ``config``
too (:meth:`HttpAdapter.unsendable`), not ``bad_request``: it is one task's part, and the
model's other calls should still be made.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Iterable, Mapping
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
from evalsite.core.providers.http_errors import SNIPPET_CHARS, error_from_body
from evalsite.core.providers.prompted import SchemaModes

if TYPE_CHECKING:
    import httpx

# httpx (and, through it, click, rich and pygments) is imported by the functions that make
# a client or a call: `evalsite validate` builds providers and never calls one.

__all__ = [
    "HttpAdapter",
    "dig",
    "dig_list",
    "optional_str",
    "token_counts",
    "make_client",
    "post_json",
]

USER_AGENT = "evalsite"


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

    async def complete(self, request: Request, client: httpx.AsyncClient) -> Completion:
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


def make_client(
    *, transport: httpx.AsyncBaseTransport | None = None, max_connections: int = 64
) -> httpx.AsyncClient:
    """The shared AsyncClient, at most ``max_connections`` open at once. Tests pass
    ``httpx.MockTransport``; otherwise requests go through aiohttp's connection pool.

    httpx's own pool (httpcore) scans every connection for every queued request and
    collapses above about 64 connections: 17 × the ideal time at 256 on this machine,
    against 1.27 × through aiohttp's pool behind the same httpx API (docs/performance.md).
    Redirects are not followed; each call sets its own timeout.
    """
    import httpx

    from evalsite.core.providers.http_pool import AiohttpPool

    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections
    )
    if transport is None:
        transport = AiohttpPool(limits)
    return httpx.AsyncClient(
        transport=transport,
        limits=limits,
        timeout=httpx.Timeout(60.0),
        follow_redirects=False,
        headers={"user-agent": USER_AGENT},
    )


def prepare_client() -> None:
    """Do now, once a process, what the first client would otherwise do when a run has
    already started: import aiohttp (~55 ms) and load the CA bundle (~35 ms)."""
    from evalsite.core.providers.http_pool import aiohttp_transport, tls_context

    aiohttp_transport()
    tls_context()


async def post_json(
    client: httpx.AsyncClient,
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
    response, text = await _send(client, url, headers, body, timeout_s, provider, secrets)
    data = _json_object(text)
    status = response.status_code
    if not 200 <= status < 300:
        raise error_from_body(status, data, text, response.headers, provider, secrets)
    if data is None:
        snippet = scrub(text[:SNIPPET_CHARS], secrets)
        message = f"{provider}: the reply is not a JSON object: {snippet!r}"
        raise ProviderError(ErrorKind.MALFORMED, message, status=status)
    return data


async def _send(
    client: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    timeout_s: float,
    provider: str,
    secrets: tuple[str, ...],
) -> tuple[httpx.Response, str]:
    """The response, whatever its status, and its body as text (:func:`_capped_text`);
    transport failures as ProviderError."""
    import httpx

    try:
        async with (
            _call_timeout(timeout_s),
            client.stream(
                "POST", url, headers=dict(headers), json=body, timeout=timeout_s
            ) as response,
        ):
            return response, await _capped_text(response, provider)
    except (TimeoutError, httpx.TimeoutException) as error:
        if _dropped(error):
            message = scrub(f"{provider}: connection lost: {error.__cause__}", secrets)
            raise ProviderError(ErrorKind.NETWORK, message) from None
        message = f"{provider}: no reply within {timeout_s:g}s"
        raise ProviderError(ErrorKind.TIMEOUT, message) from None
    except httpx.UnsupportedProtocol:
        message = f"{provider}: the URL must start with http:// or https:// (check the base URL)"
        raise ProviderError(ErrorKind.CONFIG, message) from None
    except httpx.TransportError as error:
        message = scrub(f"{provider}: {type(error).__name__}: {error}", secrets)
        raise ProviderError(ErrorKind.NETWORK, message) from None
    except httpx.InvalidURL as error:
        raise ProviderError(ErrorKind.CONFIG, f"{provider}: bad URL: {error}") from None


# A timer that fires this late (seconds) means the process did not run meanwhile (SIGSTOP,
# a suspended machine), not that the provider was slow: its reply may be waiting unread.
_FROZEN_S = 1.0
# How long such a call is then given to read what arrived while the process was stopped.
_THAW_GRACE_S = 2.0


@contextlib.asynccontextmanager
async def _call_timeout(timeout_s: float) -> AsyncIterator[None]:
    """``asyncio.timeout(timeout_s)``, except when its deadline passed while the process was
    stopped: the reply that arrived meanwhile was paid for, so the call gets
    :data:`_THAW_GRACE_S` more to read it rather than being counted a timeout and sent again
    (docs/running.md, what the spent counts)."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(None) as deadline:
        due = loop.time() + timeout_s
        handle = loop.call_at(due, _expire, loop, deadline, due)
        try:
            yield
        finally:
            handle.cancel()


def _expire(loop: asyncio.AbstractEventLoop, deadline: asyncio.Timeout, due: float) -> None:
    now = loop.time()
    frozen = now - due > _FROZEN_S
    deadline.reschedule(now + _THAW_GRACE_S if frozen else now)


async def _capped_text(response: httpx.Response, provider: str) -> str:
    """The body as text, read as it streams in (unpacked, when it comes compressed) and no
    further than :data:`MAX_REPLY_BYTES`: past that, or when the declared length is, it is
    ProviderError(MALFORMED) and the rest is never read, so no reply holds more memory."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_REPLY_BYTES:
        raise over_reply_cap(f"{provider}: the reply")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_REPLY_BYTES:
            raise over_reply_cap(f"{provider}: the reply")
    return body.decode(response.encoding or "utf-8", errors="replace")


def _dropped(error: Exception) -> bool:
    """A connection aiohttp lost (refused, reset, closed by the server) that the transport
    reports as httpx's ConnectTimeout: a network error, not a timeout."""
    import aiohttp  # already imported by the transport when it raised this

    cause = error.__cause__
    return isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(
        cause, aiohttp.ServerTimeoutError | TimeoutError
    )


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
