"""Helpers for provider tests: run an adapter against an httpx.MockTransport.

Keys are assembled at run time so no file here holds anything key-shaped.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import httpx
import pytest

from evalsite.core.providers import Completion, ProviderError, Request, make_client

ANTHROPIC_KEY = "sk-" + "ant-" + "canary" * 5
OPENAI_KEY = "sk-" + "proj-" + "Canary7" * 4
OPENROUTER_KEY = "sk-" + "or-v1-" + "canary9" * 4
GOOGLE_KEY = "AI" + "za" + "CanaryCanary" * 2
ENDPOINT_KEY = "endpoint-" + "canary-" + "secret-4711"  # not key-shaped: must be scrubbed anyway
ENV = {
    "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
    "OPENAI_API_KEY": OPENAI_KEY,
    "OPENROUTER_API_KEY": OPENROUTER_KEY,
    "GOOGLE_API_KEY": GOOGLE_KEY,
    "EVALSITE_ENDPOINT_LOCAL_VLLM_KEY": ENDPOINT_KEY,
}
SCHEMA = {
    "type": "object",
    "properties": {"category": {"type": "string", "enum": ["billing", "shipping"]}},
    "required": ["category"],
    "additionalProperties": False,
}

Respond = httpx.Response | Callable[[httpx.Request], Any]


def make_request(model: str, **fields: Any) -> Request:
    messages = fields.pop(
        "messages",
        (
            {"role": "system", "content": "You triage support tickets."},
            {"role": "user", "content": "I was charged twice."},
        ),
    )
    return Request(model=model, messages=messages, **fields)


def call(provider: Any, request: Request, respond: Respond) -> tuple[Completion, httpx.Request]:
    """Complete ``request`` against a mock server; the completion and the HTTP request sent."""
    seen: list[httpx.Request] = []

    async def handler(http_request: httpx.Request) -> httpx.Response:
        seen.append(http_request)
        result = respond(http_request) if callable(respond) else respond
        return await result if inspect.isawaitable(result) else result

    async def run() -> Completion:
        async with make_client(transport=httpx.MockTransport(handler)) as client:
            return await provider.complete(request, client)

    return asyncio.run(run()), seen[-1]


def fail(provider: Any, request: Request, respond: Respond) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(provider, request, respond)
    return info.value


def sent_json(http_request: httpx.Request) -> dict[str, Any]:
    return json.loads(http_request.content)


def raw(status: int, text: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(
        status,
        content=text.encode(),
        headers={"content-type": "application/json", **(headers or {})},
    )


class ThreadedServer:
    """An HTTP server on 127.0.0.1 in a thread of its own, so it answers while the test's
    event loop is blocked: ``post(handler)`` answers each POST (``handler`` is the
    BaseHTTPRequestHandler). ``url`` is its OpenAI-compatible base URL."""

    def __init__(self, post: Callable[[BaseHTTPRequestHandler], None]):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                post(self)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Self:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
