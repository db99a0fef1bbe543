"""The one HTTP seam: the client every provider call and the catalog's fetch go through.

:func:`make_client` gives the engine's client, :class:`AiohttpClient`: requests go straight
to aiohttp's connection pool. httpx's own pool scans every connection for every queued
request and collapses above about 64 connections; httpx's API over aiohttp's pool (the
``httpx-aiohttp`` transport evalsite used before) cost about 0.2 ms of CPU a call in
building httpx's request and response objects, a third of the engine's work per answer at
C = 256 (docs/performance.md). Tests pass ``make_client(transport=httpx.MockTransport(…))``
and get :class:`HttpxClient`. Both are an :class:`HttpClient`: one :meth:`~HttpClient.fetch`,
each transport giving only how a reply is opened and what its errors mean.

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
from typing import TYPE_CHECKING, NamedTuple, Self

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


class Sent(NamedTuple):
    """A request as a client's transport sends it."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None
    timeout_s: float


class Opened(NamedTuple):
    """A reply whose body is still to be read, as a client's transport gives it."""

    status: int
    headers: Mapping[str, str]  # looked up without regard to case
    chunks: AsyncIterator[bytes]  # the body as it streams in, unpacked
    encoding: str | None  # the charset the reply names


class HttpClient:
    """What every request goes through: :meth:`fetch`, the same for each transport, which
    a subclass gives by :meth:`_exchange` (the reply opened) and :meth:`_failure` (its
    errors as error kinds)."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        raise NotImplementedError

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
        try:
            async with (
                call_timeout(timeout_s),
                self._exchange(Sent(method, url, headers, body, timeout_s)) as opened,
            ):
                declared = opened.headers.get("content-length", "")
                read = await read_capped(opened.chunks, declared, max_bytes, too_big)
                return Reply(opened.status, opened.headers, read, opened.encoding or "utf-8")
        except TimeoutError:
            raise HttpFailure(ErrorKind.TIMEOUT, f"no reply within {timeout_s:g}s") from None
        except Exception as error:
            failure = self._failure(error, timeout_s)
            if failure is None:
                raise  # not the transport's: too_big(), or a bug
            raise failure from None

    def _exchange(self, sent: Sent) -> contextlib.AbstractAsyncContextManager[Opened]:
        raise NotImplementedError

    def _failure(self, error: Exception, timeout_s: float) -> HttpFailure | None:
        raise NotImplementedError


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
    does next (planning and storing a run, before its first call), unless it is done.

    Not a daemon: a process that ends before the thread does (a refused run, a script that
    only plans and queues) waits for it, at most the preparation's fraction of a second.
    The interpreter torn down under a thread still importing aiohttp died of SIGSEGV."""
    if aiohttp_module.cache_info().currsize and tls_context.cache_info().currsize:
        return
    threading.Thread(target=prepare_client, name="prepare-client").start()


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


class AiohttpClient(HttpClient):
    """aiohttp's ClientSession, made on the first request: a run of local providers only
    (fake, scripted, command) sends none and never loads aiohttp."""

    def __init__(self, max_connections: int) -> None:
        self._limit = max_connections
        self._session: aiohttp.ClientSession | None = None

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

    @contextlib.asynccontextmanager
    async def _exchange(self, sent: Sent) -> AsyncIterator[Opened]:
        session = self._session or self._open()
        request = session.request(
            sent.method, sent.url, headers=sent.headers, data=sent.body, allow_redirects=False
        )
        async with request as response:
            chunks = response.content.iter_chunked(CHUNK_BYTES)
            yield Opened(response.status, response.headers, chunks, response.charset)

    def _failure(self, error: Exception, timeout_s: float) -> HttpFailure | None:
        aiohttp = aiohttp_module()
        if isinstance(error, aiohttp.NonHttpUrlClientError):
            return HttpFailure(ErrorKind.CONFIG, NOT_HTTP)
        if isinstance(error, aiohttp.InvalidURL):
            return HttpFailure(ErrorKind.CONFIG, f"bad URL: {error}")
        if isinstance(error, aiohttp.ClientConnectionError):  # refused, reset, dropped, TLS
            return HttpFailure(ErrorKind.NETWORK, f"connection lost: {_line(error)}")
        if isinstance(error, aiohttp.ClientPayloadError):  # cut off, or not packed as it says
            reason = f"the reply's body could not be read: {_line(error)}"
            return HttpFailure(ErrorKind.NETWORK, reason)
        if isinstance(error, aiohttp.ClientResponseError):  # raised for a reply not HTTP
            return HttpFailure(ErrorKind.NETWORK, f"the reply is not HTTP: {_line(error.message)}")
        if isinstance(error, aiohttp.ClientError):
            return HttpFailure(ErrorKind.NETWORK, f"{type(error).__name__}: {_line(error)}")
        return None


class HttpxClient(HttpClient):
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

    async def __aexit__(self, *exc_info: object) -> None:
        await self._client.aclose()

    @contextlib.asynccontextmanager
    async def _exchange(self, sent: Sent) -> AsyncIterator[Opened]:
        stream = self._client.stream(
            sent.method, sent.url, headers=dict(sent.headers), content=sent.body,
            timeout=sent.timeout_s,
        )  # fmt: skip
        async with stream as response:
            yield Opened(response.status_code, response.headers, response.aiter_bytes(),
                         response.encoding)  # fmt: skip

    def _failure(self, error: Exception, timeout_s: float) -> HttpFailure | None:
        import httpx

        if isinstance(error, httpx.TimeoutException):
            return HttpFailure(ErrorKind.TIMEOUT, f"no reply within {timeout_s:g}s")
        if isinstance(error, httpx.UnsupportedProtocol):
            return HttpFailure(ErrorKind.CONFIG, NOT_HTTP)
        if isinstance(error, httpx.TransportError):
            return HttpFailure(ErrorKind.NETWORK, f"{type(error).__name__}: {error}")
        if isinstance(error, httpx.InvalidURL):
            return HttpFailure(ErrorKind.CONFIG, f"bad URL: {error}")
        return None


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
