"""The client the engine really uses (httpx's API over aiohttp's pool), against servers this
test starts on 127.0.0.1: a reply, a refused connection, a dropped one, a silent one, and
more connections at once than httpx's own pool handles well."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import threading
import time

import pytest

from evalsite.core.catalog import CatalogError, fetch_catalog
from evalsite.core.providers import ErrorKind, ProviderError, make_client
from evalsite.core.providers.base import MAX_REPLY_BYTES
from evalsite.core.providers.http_json import json_bytes
from evalsite.core.providers.openai import compatible_provider
from tests.helpers.providers import ThreadedServer, make_request

CHAT = {
    "id": "chatcmpl-1",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}  # fmt: skip


class Server:
    """An HTTP/1.1 keep-alive server: `behave(reader, writer)` answers each connection."""

    def __init__(self, behave):
        self.behave = behave
        self.in_flight = self.most_in_flight = 0

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=1024)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"

    async def __aexit__(self, *exc) -> None:
        self.server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.server.wait_closed(), 2)

    async def _connection(self, reader, writer) -> None:
        try:
            await self.behave(self, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def read_request(reader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    return await reader.readexactly(length)


async def answer(server: Server, reader, writer, hold_until: int = 0) -> None:
    """Answer each request; with `hold_until`, only once that many are in flight at once
    (or after 10 s), so the test sees whether the client really holds them all open."""
    while True:
        await read_request(reader)
        server.in_flight += 1
        server.most_in_flight = max(server.most_in_flight, server.in_flight)
        for _ in range(1000):
            if server.most_in_flight >= hold_until:
                break
            await asyncio.sleep(0.01)
        server.in_flight -= 1
        body = json.dumps(CHAT).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()


async def complete(base_url: str, *, timeout_s: float = 5, connections: int = 8, times: int = 1):
    provider = compatible_provider("local", base_url, None)
    request = make_request("local/m", timeout_s=timeout_s)
    async with make_client(max_connections=connections) as client:
        return await asyncio.gather(*(provider.complete(request, client) for _ in range(times)))


def failure(coroutine) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        asyncio.run(coroutine)
    return info.value


def test_a_reply_comes_back_through_the_aiohttp_pool():
    async def go():
        async with Server(answer) as url:
            return await complete(url)

    [completion] = asyncio.run(go())

    assert completion.text == "hi"
    assert completion.usage.input_tokens == 3


def test_150_calls_at_once_are_all_in_flight_together_and_all_complete():
    server = Server(lambda s, r, w: answer(s, r, w, hold_until=150))

    async def go():
        async with server as url:
            return await complete(url, connections=150, times=150)

    completions = asyncio.run(go())

    assert len(completions) == 150 and {c.text for c in completions} == {"hi"}
    assert server.most_in_flight == 150


def free_port() -> int:
    """A port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_refused_connection_is_a_network_error():
    error = failure(complete(f"http://127.0.0.1:{free_port()}/v1"))

    assert error.kind == ErrorKind.NETWORK and error.retryable
    assert error.message.startswith("local: ")


def test_a_connection_the_server_drops_is_a_network_error_not_a_timeout():
    async def drop(server, reader, writer):
        await read_request(reader)  # then close without a reply

    async def go():
        async with Server(drop) as url:
            await complete(url)

    error = failure(go())

    assert error.kind == ErrorKind.NETWORK and error.retryable
    assert "no reply within" not in error.message


def test_a_server_that_never_answers_is_a_timeout_at_the_requests_deadline():
    async def silent(server, reader, writer):
        await read_request(reader)
        await asyncio.sleep(30)

    async def go():
        async with Server(silent) as url:
            await complete(url, timeout_s=0.5)

    error = failure(go())

    assert error.kind == ErrorKind.TIMEOUT
    assert "no reply within 0.5s" in error.message


class SlowServer(ThreadedServer):
    """Answers each POST `answered_after` seconds after it has it, from its own thread, so
    it answers while the test's event loop is frozen."""

    def __init__(self, answered_after: float):
        self.received = threading.Event()
        self.answered_after = answered_after
        super().__init__(self._answer)

    def _answer(self, handler) -> None:
        handler.rfile.read(int(handler.headers["content-length"]))
        self.received.set()
        time.sleep(self.answered_after)
        body = json.dumps(CHAT).encode()
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


def frozen_call(server: SlowServer, *, timeout_s: float, frozen_s: float):
    """One call whose process stops (its event loop blocked, as by SIGSTOP) for `frozen_s`
    once the server has the request."""

    async def go():
        call = asyncio.ensure_future(complete(server.url, timeout_s=timeout_s))
        while not server.received.is_set():
            await asyncio.sleep(0.01)
        time.sleep(frozen_s)  # nothing of the loop runs: the reply arrives meanwhile
        return await call

    return go()


def test_a_reply_that_arrived_while_the_process_was_stopped_past_the_timeout_is_read():
    # It was paid for: taking it for a timeout sent the call again (issue 25 item 18).
    with SlowServer(answered_after=0.2) as server:
        [completion] = asyncio.run(frozen_call(server, timeout_s=1, frozen_s=3))

    assert completion.text == "hi"


def test_a_call_stopped_past_its_timeout_with_no_reply_is_still_a_timeout():
    with SlowServer(answered_after=30) as server:
        error = failure(frozen_call(server, timeout_s=1, frozen_s=2.5))

    assert error.kind == ErrorKind.TIMEOUT


# -- what the engine's client (aiohttp, no httpx) sends and reads ---------------------------


class Recording(ThreadedServer):
    """Answers each POST with `status`, `headers` and `body`; keeps what it was sent."""

    def __init__(self, status: int = 200, body: bytes = b"", headers: dict | None = None):
        self.sent: list[tuple[dict, bytes]] = []
        self.status, self.body, self.headers = status, body or json.dumps(CHAT).encode(), headers
        super().__init__(self._answer)

    def _answer(self, handler) -> None:
        content = handler.rfile.read(int(handler.headers["content-length"]))
        self.sent.append(({k.lower(): v for k, v in handler.headers.items()}, content))
        handler.send_response(self.status)
        for name, value in {"content-type": "application/json", **(self.headers or {})}.items():
            handler.send_header(name, value)
        handler.send_header("content-length", str(len(self.body)))
        handler.end_headers()
        handler.wfile.write(self.body)


def test_the_body_is_compact_utf8_json_sent_with_its_content_type_and_user_agent():
    request = make_request("local/m", messages=({"role": "user", "content": "café ✓"},))
    with Recording() as server:
        provider = compatible_provider("local", server.url, None)
        completion = asyncio.run(_one(provider, request))

    headers, content = server.sent[-1]
    assert content == json_bytes(provider.body(provider.prepare(request)))
    assert "café ✓".encode() in content and b", " not in content and b": " not in content
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"] == "evalsite"
    assert completion.text == "hi"


async def _one(provider, request):
    async with make_client() as client:
        return await provider.complete(request, client)


def test_a_gzip_reply_is_unpacked():
    with Recording(body=gzip.compress(json.dumps(CHAT).encode()),
                   headers={"content-encoding": "gzip"}) as server:  # fmt: skip
        [completion] = asyncio.run(complete(server.url))
    assert completion.text == "hi"


def test_a_gzip_bomb_is_held_to_the_cap_as_it_unpacks():
    content = b"x" * (MAX_REPLY_BYTES + 2**20)
    packed = gzip.compress(b'{"choices": [{"message": {"content": "' + content + b'"}}]}')
    with Recording(body=packed, headers={"content-encoding": "gzip"}) as server:
        error = failure(complete(server.url))
    assert error.kind == ErrorKind.MALFORMED and "10 MiB reply cap" in error.message


def test_an_error_status_is_read_with_its_headers():
    body = json.dumps({"error": {"message": "slow down", "type": "rate_limit"}}).encode()
    with Recording(status=429, body=body, headers={"Retry-After": "7"}) as server:
        error = failure(complete(server.url))
    assert error.kind == ErrorKind.RATE_LIMITED and error.retry_after == 7
    assert "slow down" in error.message


def test_a_url_that_is_not_http_is_a_config_error():
    error = failure(complete("ftp://127.0.0.1:9/v1"))
    assert error.kind == ErrorKind.CONFIG and "http:// or https://" in error.message


def test_the_catalog_is_fetched_by_the_same_client():
    catalog = json.dumps({"data": []}).encode()

    class Catalog(ThreadedServer):
        def __init__(self):
            super().__init__(lambda handler: None)
            outer = self

            def do_get(handler):
                outer.path = handler.path
                handler.send_response(200)
                handler.send_header("content-length", str(len(catalog)))
                handler.end_headers()
                handler.wfile.write(catalog)

            self.httpd.RequestHandlerClass.do_GET = do_get

    async def go(url: str) -> bytes:
        async with make_client(max_connections=1) as client:
            return await fetch_catalog(client, url)

    with Catalog() as server:
        assert asyncio.run(go(server.url + "/models")) == catalog
    assert server.path == "/v1/models"
    with pytest.raises(CatalogError, match="cannot connect to"):
        asyncio.run(go(f"http://127.0.0.1:{free_port()}/models"))


# -- a server that lies: what it sends is not what it says --------------------------------


async def lying(reply: bytes) -> ProviderError:
    """The error of a call to a server that answers every request with `reply`."""

    async def behave(server, reader, writer):
        await read_request(reader)
        writer.write(reply)
        await writer.drain()

    async with Server(behave) as url:
        with pytest.raises(ProviderError) as info:
            await complete(url, timeout_s=5)
    return info.value


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (b"garbage\r\n\r\n", "the reply is not HTTP"),
        (
            b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 5\r\n\r\nhello",
            "the reply's body could not be read",
        ),
        (
            b'HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n{"a":',
            "the reply's body could not be read",
        ),
    ],
    ids=["not-http", "not-gzip", "cut-off"],
)
def test_a_reply_that_is_not_what_it_says_is_a_network_error_on_one_line(reply, said):
    # Through httpx's layer the first two escaped as raw aiohttp and httpx exceptions.
    error = asyncio.run(lying(reply))

    assert error.kind == ErrorKind.NETWORK and error.retryable
    assert error.message.startswith(f"local: {said}: ") and "\n" not in error.message


def test_a_charset_python_does_not_know_is_read_as_utf8():
    body = json.dumps(CHAT).encode()
    reply = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=bogus\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )

    async def behave(server, reader, writer):
        await read_request(reader)
        writer.write(reply)
        await writer.drain()

    async def go():
        async with Server(behave) as url:
            return await complete(url)

    [completion] = asyncio.run(go())
    assert completion.text == "hi"
