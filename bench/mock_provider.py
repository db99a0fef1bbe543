"""A local OpenAI-compatible Chat Completions server with a fixed latency, for benchmarks.

    .venv/bin/python bench/mock_provider.py --latency-ms 200 [--port 0] [--max-seconds 1800]
        [--host 127.0.0.1] [--key KEY] [--log FILE]

It listens on 127.0.0.1 unless ``--host`` names another address (the soak, bench/soak.py,
gives it its namespace's address), prints one line ``listening on http://HOST:PORT`` on
stdout once it accepts connections, and answers:

- ``POST …/chat/completions``: after sleeping ``--latency-ms``, a ``chat.completion`` object
  echoing the request's model, with one choice and a ``usage`` block (prompt tokens ≈ body
  bytes ÷ 4, a fixed number of completion tokens). A body that is not a JSON object gets a
  400 in OpenAI's error shape.
- A request for a model whose name ends in ``judge`` (``mock/judge`` on the Endpoint
  ``mock`` sends ``judge``) is a judge call: its reply is the verdict evalsite's judge prompt
  asks for, ``{"reason": "…", "winner": "1" | "2" | "tie"}`` (what
  ``evalsite.core.judging.parse_verdict`` reads). The winner is a pure function of the
  request's messages: 1 for half of them, 2 for 30 %, tie for 20 %, so both orders of a pair
  and their flips vary, and the same request always gets the same verdict.
- With ``--key``, a completion without ``Authorization: Bearer KEY`` gets a 401 (so a
  test sees that the key reached the worker that made the call, and only the key).
- ``POST /control`` with ``{"status": 429 | 500 | 503, "rate": 0.0-1.0, "seconds": S}``:
  for the next S seconds that share of completions (drawn from a seeded generator) is
  answered with that status instead, after the latency for a 5xx and at once for a 429
  (with ``Retry-After: 1``). ``{"status": 0}`` ends a burst.
- With ``--log FILE``, one JSON line a completion *answered 200* (what a provider bills):
  ``{"n", "t", "model", "sha", "prompt_tokens", "completion_tokens"}``, ``sha`` the SHA-256
  of the request's messages and params (the same call sent twice has the same sha).
- ``GET /stats``: ``{"requests", "judge_requests", "in_flight", "max_in_flight",
  "max_judge_in_flight", "errors", "connections"}`` since the last reset (judge requests in
  flight are counted on their own too); ``POST /stats/reset`` zeroes them. The benchmark
  uses them to see how many calls a client really had in flight and how many connections
  it opened.

It is a minimal HTTP/1.1 server on ``asyncio.start_server`` (standard library only): keep-alive,
``Content-Length`` bodies (chunked request bodies get 501, which no client used here sends),
one request at a time per connection, as many connections as the OS allows. Each request
costs a few hundred microseconds of CPU, so one core holds thousands of requests a second.

It stops by itself after ``--max-seconds`` or when its parent process goes away, so a crashed
benchmark never leaves it running.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import itertools
import json
import os
import random
import signal
import sys
import time
from pathlib import Path

HOST = "127.0.0.1"
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 8 * 1024 * 1024
COMPLETION_TOKENS = 8
REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
           411: "Length Required", 413: "Payload Too Large", 429: "Too Many Requests",
           500: "Internal Server Error", 501: "Not Implemented",
           503: "Service Unavailable"}  # fmt: skip


class Stats:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.judge_requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.judge_in_flight = 0
        self.max_judge_in_flight = 0
        self.errors = 0
        self.connections = 0

    @contextlib.asynccontextmanager
    async def in_flight_of(self, judge: bool):
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.judge_in_flight += judge
        self.max_judge_in_flight = max(self.max_judge_in_flight, self.judge_in_flight)
        try:
            yield
        finally:
            self.in_flight -= 1
            self.judge_in_flight -= judge

    def as_dict(self) -> dict:
        return {
            "requests": self.requests,
            "judge_requests": self.judge_requests,
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "max_judge_in_flight": self.max_judge_in_flight,
            "errors": self.errors,
            "connections": self.connections,
        }


class Burst:
    """Errors the control endpoint asked for: a status, a share of calls, an end time."""

    def __init__(self, seed: int) -> None:
        self.status, self.rate, self.until = 0, 0.0, 0.0
        self.rng = random.Random(seed)

    def set(self, control: dict) -> None:
        self.status = int(control.get("status") or 0)
        self.rate = float(control.get("rate", 1.0))
        self.until = time.monotonic() + float(control.get("seconds", 0))

    def draw(self) -> int:
        """The status to answer this call with instead of 200, or 0."""
        if self.status and time.monotonic() < self.until and self.rng.random() < self.rate:
            return self.status
        return 0


class MockProvider:
    def __init__(
        self, latency_s: float, *, key: str = "", log: Path | None = None, seed: int = 0
    ) -> None:
        self.latency_s = latency_s
        self.stats = Stats()
        self.ids = itertools.count(1)
        self.key = key
        self.log = log.open("a", buffering=1, encoding="utf-8") if log else None
        self.burst = Burst(seed)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats.connections += 1
        try:
            while await self._one_request(reader, writer):
                pass
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _one_request(self, reader, writer) -> bool:
        """Serve one request; False when the connection should close."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as error:
            if error.partial:
                raise
            return False  # the client closed an idle keep-alive connection
        if len(head) > MAX_HEADER_BYTES:
            await self._send(writer, 413, {"error": "headers too large"}, keep_alive=False)
            return False
        lines = head.decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        target, _, version = rest.partition(" ")
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        keep_alive = _keep_alive(version, headers.get("connection", ""))
        if "chunked" in headers.get("transfer-encoding", "").lower():
            await self._send(writer, 501, _error("chunked bodies are not supported"), False)
            return False
        length = int(headers.get("content-length") or 0)
        if length > MAX_BODY_BYTES:
            await self._send(writer, 413, _error("body too large"), keep_alive=False)
            return False
        body = await reader.readexactly(length) if length else b""
        path = target.split("?", 1)[0]
        extra = {}
        if method == "POST" and path.endswith("/chat/completions"):
            if self.key and headers.get("authorization") != f"Bearer {self.key}":
                status, payload = 401, _error("missing or wrong key")
            else:
                status, payload = await self._completion(body)
                extra = {"retry-after": "1"} if status == 429 else {}
        elif method == "POST" and path == "/control":
            self.burst.set(json.loads(body or b"{}"))
            status, payload = 200, {"status": self.burst.status, "rate": self.burst.rate}
        elif method == "GET" and path == "/stats":
            status, payload = 200, self.stats.as_dict()
        elif method == "POST" and path == "/stats/reset":
            self.stats.reset()
            status, payload = 200, self.stats.as_dict()
        else:
            status, payload = 404, _error(f"no route {method} {path}")
        await self._send(writer, status, payload, keep_alive, extra)
        return keep_alive

    async def _completion(self, body: bytes) -> tuple[int, dict]:
        stats = self.stats
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        judge = isinstance(request, dict) and str(request.get("model") or "").endswith("judge")
        stats.requests += 1
        stats.judge_requests += judge
        failure = self.burst.draw()
        if failure == 429:
            stats.errors += 1
            return 429, _error("rate limited (a burst asked for by /control)")
        async with stats.in_flight_of(judge):
            await asyncio.sleep(self.latency_s)
        if not isinstance(request, dict):
            stats.errors += 1
            return 400, _error("the body is not a JSON object")
        if failure:
            stats.errors += 1
            return failure, _error("server error (a burst asked for by /control)")
        number = next(self.ids)
        model = str(request.get("model") or "mock")
        content = _verdict(request.get("messages"), number) if judge else f"mock answer {number}"
        prompt_tokens = max(1, len(body) // 4)
        if self.log is not None:
            self._log(number, model, request, prompt_tokens)
        return 200, {
            "id": f"chatcmpl-mock-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": COMPLETION_TOKENS,
                "total_tokens": prompt_tokens + COMPLETION_TOKENS,
            },
        }

    def _log(self, number: int, model: str, request: dict, prompt_tokens: int) -> None:
        sha = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
        line = {"n": number, "t": round(time.time(), 3), "model": model, "sha": sha,
                "prompt_tokens": prompt_tokens, "completion_tokens": COMPLETION_TOKENS}  # fmt: skip
        self.log.write(json.dumps(line) + "\n")

    @staticmethod
    async def _send(
        writer, status: int, payload: dict, keep_alive: bool, extra: dict | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        more = "".join(f"{name}: {value}\r\n" for name, value in (extra or {}).items())
        head = (
            f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
            f"{more}content-type: application/json\r\n"
            f"content-length: {len(data)}\r\n"
            f"connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
        ).encode()
        writer.write(head + data)
        await writer.drain()


def _verdict(messages, number: int) -> str:
    """A judge reply for `messages`: the same messages always get the same winner. The
    reason names the reply's number, so a stored verdict can be traced to one request."""
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
    roll = digest[0] % 10
    winner = "1" if roll < 5 else "2" if roll < 8 else "tie"
    reason = "Both read alike." if winner == "tie" else f"Answer {winner} reads better."
    return json.dumps({"reason": f"{reason} (mock verdict {number})", "winner": winner})


def _keep_alive(version: str, connection: str) -> bool:
    connection = connection.lower()
    if version.strip() == "HTTP/1.0":
        return "keep-alive" in connection
    return "close" not in connection


def _error(message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


async def serve(port: int, latency_ms: float, max_seconds: float, *, host: str = HOST,
                **options) -> None:  # fmt: skip
    mock = MockProvider(latency_ms / 1000, **options)
    server = await asyncio.start_server(mock.handle, host, port, backlog=4096)
    bound = server.sockets[0].getsockname()[1]
    print(f"listening on http://{host}:{bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.call_later(max_seconds, stop.set)
    parent = os.getppid()

    async def watch_parent() -> None:
        while os.getppid() == parent:
            await asyncio.sleep(1)
        stop.set()

    watcher = asyncio.create_task(watch_parent())
    async with server:
        await stop.wait()
    watcher.cancel()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--latency-ms", type=float, default=200.0, help="sleep per completion")
    parser.add_argument(
        "--max-seconds", type=float, default=1800.0, help="stop by itself after this long"
    )
    parser.add_argument("--host", default=HOST, help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--key", default="", help="require Authorization: Bearer KEY")
    parser.add_argument("--log", type=Path, help="append one JSON line per 200 completion")
    parser.add_argument("--seed", type=int, default=0, help="for the error bursts' draws")
    args = parser.parse_args(argv)
    options = {"key": args.key, "log": args.log, "seed": args.seed, "host": args.host}
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port, args.latency_ms, args.max_seconds, **options))
    sys.exit(0)


if __name__ == "__main__":
    main()
