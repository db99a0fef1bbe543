"""The one HTTP seam: the client every provider call and the catalog's fetch go through.

:func:`make_client` gives the engine's client, :class:`AiohttpClient`: requests go straight
to aiohttp's connection pool. httpx's own pool scans every connection for every queued
request and collapses above about 64 connections; httpx's API over aiohttp's pool (the
``httpx-aiohttp`` transport evalsite used before) cost about 0.2 ms of CPU a call in
building httpx's request and response objects, a third of the engine's work per answer at
C = 256 (docs/performance.md). Tests pass ``make_client(transport=httpx.MockTransport(…))``
and get :class:`HttpxClient`, the same :meth:`fetch` over that transport.

Both clients bound a request by its ``timeout_s`` as a whole (connect, send, wait and read,
see :func:`call_timeout`), read the body no further than ``max_bytes`` as it streams in
(unpacked, when it comes compressed), never follow a redirect, and report a failure to get
a reply as :class:`HttpFailure` with its error kind: ``timeout``, ``network`` (refused,
reset, dropped, cut off), or ``config`` (a URL that is not http(s) or not a URL).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple, Protocol, Self

from evalsite.core.providers.base import ErrorKind

if TYPE_CHECKING:
    import ssl
    from types import ModuleType

    import aiohttp
    import httpx

USER_AGENT = "evalsite"
KEEPALIVE_S = 5.0  # an idle pooled connection is closed after this (httpx's default)
CHUNK_BYTES = 64 * 1024
NOT_HTTP = "the URL must start with http:// or https:// (check the base URL)"


class Reply(NamedTuple):
    status: int
    headers: Mapping[str, str]  # looked up without regard to case
    body: bytes
    encoding: str  # the charset the reply names, else UTF-8

    def text(self) -> str:
        try:
            return self.body.decode(self.encoding, errors="replace")
        except LookupError:  # a charset Python does not know
            return self.body.decode("utf-8", errors="replace")


class HttpFailure(Exception):
    """No reply: ``kind`` is timeout, network or config; ``reason`` says what happened."""

    def __init__(self, kind: ErrorKind, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


class HttpClient(Protocol):
    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc_info: object) -> None: ...

    async def fetch(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout_s: float,
        max_bytes: int,
        too_big: Callable[[], Exception],
    ) -> Reply:
        """The reply, whatever its status; ``too_big()`` is raised once its body would pass
        ``max_bytes`` (or its declared length does), and the rest is never read."""
        ...


def make_client(
    *, transport: httpx.AsyncBaseTransport | None = None, max_connections: int = 64
) -> HttpClient:
    """The shared client, at most ``max_connections`` open at once; over ``transport``
    when a test gives one."""
    if transport is not None:
        return HttpxClient(transport, max_connections)
    return AiohttpClient(max_connections)


_preparing = threading.Lock()


def prepare_client() -> None:
    """Do now, once a process, what the first request would otherwise do when a run has
    already started: import aiohttp (which makes its own TLS contexts as it loads, most of
    its cost) and load the CA bundle. Safe to call from several threads at once: a call
    while another prepares waits for it."""
    with _preparing:
        aiohttp_module()
        tls_context()


def prepare_client_soon() -> None:
    """:func:`prepare_client` on a thread of its own, so it goes on beside what the caller
    does next (planning and storing a run, before its first call), unless it is done."""
    if aiohttp_module.cache_info().currsize and tls_context.cache_info().currsize:
        return
    threading.Thread(target=prepare_client, name="prepare-client", daemon=True).start()


@functools.cache
def aiohttp_module() -> ModuleType:
    import aiohttp  # imported by processes that make calls only

    return aiohttp


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Verified TLS against the CA bundle httpx would use: the one ``SSL_CERT_FILE`` or
    ``SSL_CERT_DIR`` names, else certifi's."""
    import ssl

    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class AiohttpClient:
    """aiohttp's ClientSession, made on the first request: a run of local providers only
    (fake, scripted, command) sends none and never loads aiohttp."""

    def __init__(self, max_connections: int) -> None:
        self._limit = max_connections
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._session is not None:
            await self._session.close()

    def _open(self) -> aiohttp.ClientSession:
        aiohttp = aiohttp_module()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=self._limit, keepalive_timeout=KEEPALIVE_S, ssl=tls_context()
            ),
            headers={"user-agent": USER_AGENT},
            timeout=aiohttp.ClientTimeout(total=None),  # call_timeout bounds each request
        )
        return self._session

    async def fetch(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout_s: float,
        max_bytes: int,
        too_big: Callable[[], Exception],
    ) -> Reply:
        aiohttp = aiohttp_module()
        session = self._session or self._open()
        try:
            async with (
                call_timeout(timeout_s),
                session.request(
                    method, url, headers=headers, data=body, allow_redirects=False
                ) as response,
            ):
                declared = response.headers.get("content-length", "")
                chunks = response.content.iter_chunked(CHUNK_BYTES)
                read = await read_capped(chunks, declared, max_bytes, too_big)
                return Reply(response.status, response.headers, read, response.charset or "utf-8")
        except TimeoutError:
            raise HttpFailure(ErrorKind.TIMEOUT, f"no reply within {timeout_s:g}s") from None
        except aiohttp.NonHttpUrlClientError:
            raise HttpFailure(ErrorKind.CONFIG, NOT_HTTP) from None
        except aiohttp.InvalidURL as error:
            raise HttpFailure(ErrorKind.CONFIG, f"bad URL: {error}") from None
        except aiohttp.ClientConnectionError as error:  # refused, reset, dropped, TLS
            raise HttpFailure(ErrorKind.NETWORK, f"connection lost: {_line(error)}") from None
        except aiohttp.ClientPayloadError as error:  # cut off, or not packed as it says
            reason = f"the reply's body could not be read: {_line(error)}"
            raise HttpFailure(ErrorKind.NETWORK, reason) from None
        except aiohttp.ClientResponseError as error:  # raised for a reply that is not HTTP
            reason = f"the reply is not HTTP: {_line(error.message)}"
            raise HttpFailure(ErrorKind.NETWORK, reason) from None
        except aiohttp.ClientError as error:
            raise HttpFailure(
                ErrorKind.NETWORK, f"{type(error).__name__}: {_line(error)}"
            ) from None


class HttpxClient:
    """:meth:`fetch` through an httpx transport: the seam the tests use
    (``httpx.MockTransport``), where a handler that raises an httpx error plays the network."""

    def __init__(self, transport: httpx.AsyncBaseTransport, max_connections: int) -> None:
        import httpx

        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self._client = httpx.AsyncClient(
            transport=transport,
            limits=limits,
            follow_redirects=False,
            headers={"user-agent": USER_AGENT},
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._client.aclose()

    async def fetch(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None,
        timeout_s: float,
        max_bytes: int,
        too_big: Callable[[], Exception],
    ) -> Reply:
        import httpx

        try:
            async with (
                call_timeout(timeout_s),
                self._client.stream(
                    method, url, headers=dict(headers), content=body, timeout=timeout_s
                ) as response,
            ):
                declared = response.headers.get("content-length", "")
                read = await read_capped(response.aiter_bytes(), declared, max_bytes, too_big)
                encoding = response.encoding or "utf-8"
                return Reply(response.status_code, response.headers, read, encoding)
        except (TimeoutError, httpx.TimeoutException):
            raise HttpFailure(ErrorKind.TIMEOUT, f"no reply within {timeout_s:g}s") from None
        except httpx.UnsupportedProtocol:
            raise HttpFailure(ErrorKind.CONFIG, NOT_HTTP) from None
        except httpx.TransportError as error:
            raise HttpFailure(ErrorKind.NETWORK, f"{type(error).__name__}: {error}") from None
        except httpx.InvalidURL as error:
            raise HttpFailure(ErrorKind.CONFIG, f"bad URL: {error}") from None


def _line(error: object) -> str:
    """aiohttp's message on one line (it quotes the bytes it choked on over several)."""
    return " ".join(str(error).split())


async def read_capped(
    chunks: AsyncIterator[bytes], declared: str, max_bytes: int, too_big: Callable[[], Exception]
) -> bytes:
    """The body as it streams in, no further than ``max_bytes``: past that, or when the
    declared length is, ``too_big()`` is raised and the rest is never read."""
    if declared.isdigit() and int(declared) > max_bytes:
        raise too_big()
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > max_bytes:
            raise too_big()
    return bytes(body)


# A timer that fires this late (seconds) means the process did not run meanwhile (SIGSTOP,
# a suspended machine), not that the provider was slow: its reply may be waiting unread.
_FROZEN_S = 1.0
# How long such a call is then given to read what arrived while the process was stopped.
_THAW_GRACE_S = 2.0


@contextlib.asynccontextmanager
async def call_timeout(timeout_s: float) -> AsyncIterator[None]:
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
