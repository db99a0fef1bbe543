"""The transport behind the shared client (:func:`~evalsite.core.providers.http_json.make_client`):
httpx's API over aiohttp's connection pool. A module of its own because it subclasses an httpx
class, and httpx is imported only by a process that makes a client."""

from __future__ import annotations

import functools
import ssl
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from httpx_aiohttp import AiohttpTransport


class AiohttpPool(httpx.AsyncBaseTransport):
    """httpx-aiohttp's transport, made on the first request: a run of local providers only
    (fake, scripted, command) sends none and never loads aiohttp."""

    def __init__(self, limits: httpx.Limits) -> None:
        self._limits = limits
        self._transport: httpx.AsyncBaseTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._transport is None:
            self._transport = aiohttp_transport()(limits=self._limits, verify=tls_context())
        return await self._transport.handle_async_request(request)

    async def aclose(self) -> None:
        if self._transport is not None:
            await self._transport.aclose()


@functools.cache
def aiohttp_transport() -> type[AiohttpTransport]:
    from httpx_aiohttp import AiohttpTransport  # imported by processes that make calls only

    return AiohttpTransport


@functools.cache
def tls_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()
