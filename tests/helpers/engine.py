"""Helpers for the engine's fault tests: a recording OpenAI-compatible mock, runs to execute.

The mock is an ``httpx.MockTransport`` handler (passed to ``runner.execute(transport=…)``)
standing in for an admin-defined Endpoint; it records every call with its start and end
time, so a test can count calls per answer and see when they happened. Nothing here opens
a socket except :class:`LocalServer`, which listens on 127.0.0.1 for tests whose runner
lives in another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from evalsite.core.suites import parse_suite
from runs.engine import runner
from runs.models import Endpoint, Run
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.helpers.factories import make_price_table, make_suite_version

MODELS = ("mock/a", "mock/b")
# $1000 per million tokens both ways: one token costs $0.001, so sums are easy to read.
PRICE = ("1000", "1000")
TOKENS_IN, TOKENS_OUT = 10, 20
CALL_COST = Decimal(TOKENS_IN + TOKENS_OUT) / 1000


# --- the mock provider --------------------------------------------------------------------


def reply(text: str = "ok", *, prompt_tokens: int = TOKENS_IN, completion_tokens: int = TOKENS_OUT):
    """A Chat Completions 200 with `text` and usage."""
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-test",
            "model": "served-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        },
    )


def error(status: int, message: str = "boom", headers: dict[str, str] | None = None):
    body = {"error": {"type": "test_error", "message": message}}
    return httpx.Response(status, json=body, headers=headers or {})


@dataclass
class Call:
    model: str  # "mock/a"
    content: str  # the last user message: identifies the case
    attempt: int  # 1 for the first call of this (model, content), 2 for the next…
    started: float
    ended: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.model, self.content)


# respond(call) -> httpx.Response, or raises an httpx exception (a transport failure)
Respond = Callable[[Call], httpx.Response]


@dataclass
class MockLLM:
    """An OpenAI-compatible server for ``httpx.MockTransport``; records every call."""

    respond: Respond = field(default=lambda call: reply(f"answer to {call.content}"))
    latency: float = 0.0
    endpoint: str = "mock"
    # Calls for which hold(call) is true wait (without blocking the loop) until release is set.
    hold: Callable[[Call], bool] | None = None
    release: threading.Event = field(default_factory=threading.Event)
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: Counter[tuple[str, str]] = Counter()
        self.held = 0

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handler)

    async def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        model = f"{self.endpoint}/{body['model']}"
        content = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        with self._lock:
            self._seen[(model, content)] += 1
            call = Call(model, content, self._seen[(model, content)], time.monotonic())
            self.calls.append(call)
        try:
            if self.hold is not None and self.hold(call):
                await self._wait_for_release()
            if self.latency:
                await asyncio.sleep(self.latency)
            return self.respond(call)
        finally:
            call.ended = time.monotonic()

    async def _wait_for_release(self) -> None:
        with self._lock:
            self.held += 1
        try:
            while not self.release.is_set():
                await asyncio.sleep(0.01)
        finally:
            with self._lock:
                self.held -= 1

    def count(self, model: str | None = None) -> int:
        return sum(1 for c in self.calls if model is None or c.model == model)

    def per_key(self) -> Counter[tuple[str, str]]:
        return Counter(c.key for c in self.calls)


def answer_key(answer) -> tuple[str, str]:
    """The (model, user content) the mock sees for an Answer row."""
    users = [m["content"] for m in answer.request["messages"] if m["role"] == "user"]
    return (answer.model, users[-1])


# --- a run to execute -----------------------------------------------------------------------


def suite_text(
    *,
    name: str = "faults",
    cases: int = 4,
    models: tuple[str, ...] = MODELS,
    max_tokens: int = 50,
    timeout_s: float = 5,
    repeats: int = 1,
) -> str:
    case_lines = "\n".join(
        f"      - {{id: c{i}, vars: {{word: w{i}}}}}" for i in range(1, cases + 1)
    )
    return (
        f"suite: {name}\nversion: 1\nmodels: [{', '.join(models)}]\nrepeats: {repeats}\n"
        f"defaults: {{temperature: 0, max_tokens: {max_tokens}, timeout_s: {timeout_s}}}\n"
        'tasks:\n  - id: echo\n    prompt: "Echo {{word}}."\n    cases:\n'
        f"{case_lines}\n"
    )


def make_endpoint(name: str = "mock", *, key_env: str = "") -> Endpoint:
    return Endpoint.objects.create(
        name=name, base_url=f"http://{name}.invalid/v1", key_env_var=key_env
    )


def make_mock_prices(models: tuple[str, ...] = MODELS, price: tuple[str, str] = PRICE):
    return make_price_table({m: price for m in models}, active=True)


def plan_run(text: str | None = None, **options) -> Run:
    """Plan and store a run of `text` (default: 4 cases × mock/a, mock/b) against the mock."""
    text = text or suite_text()
    loaded = parse_suite(text.encode(), filename="faults.yaml", origin="upload")
    version = make_suite_version(text)
    return store_plan(make_plan(version, loaded, RunOptions(**options)))


def mock_run(**options) -> Run:
    """The endpoint, an active price table and a planned run, in one call."""
    text = options.pop("text", None) or suite_text(
        **{
            k: options.pop(k)
            for k in ("cases", "max_tokens", "timeout_s", "repeats")
            if k in options
        }
    )
    if not Endpoint.objects.filter(name="mock").exists():
        make_endpoint()
        make_mock_prices()
    return plan_run(text, **options)


def execute(run_id: str, transport=None, *, shards: int = 1, timeout: float = 60) -> Run:
    """``runner.execute`` with a watchdog: a runner that hangs fails the test instead."""
    outcome: list = []

    def target() -> None:
        try:
            outcome.append(runner.execute(run_id, transport=transport, shards=shards))
        except BaseException as error:  # noqa: BLE001 - re-raised in the test's thread
            outcome.append(error)

    thread = threading.Thread(target=target, daemon=True, name=f"shard-{run_id}")
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"runner.execute did not return within {timeout:g}s"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def wait_until(predicate, timeout: float = 30) -> None:
    """Poll `predicate` until it is true; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# --- subprocesses and real servers ------------------------------------------------------------


class LocalServer:
    """An OpenAI-compatible HTTP server on 127.0.0.1 with a fixed latency, for other processes
    (or for a real client in this one); a subclass answers its own way (:meth:`answer`)."""

    def __init__(self, latency: float = 0.2):
        self.latency = latency
        self.calls: list[tuple[str, str]] = []
        self.in_flight = 0
        self.in_flight_by_model: Counter[str] = Counter()
        self.max_in_flight_by_model: Counter[str] = Counter()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    return  # the caller died mid-request (a killed worker)
                content = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
                model = f"mock/{body['model']}"
                with server._lock:
                    index = len(server.calls)
                    server.calls.append((model, content))
                    server.in_flight += 1
                    server.in_flight_by_model[model] += 1
                    server.max_in_flight_by_model[model] = max(
                        server.max_in_flight_by_model[model], server.in_flight_by_model[model]
                    )
                try:
                    data = server.answer(index, model, content)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                        server.in_flight_by_model[model] -= 1
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                # A caller that died waiting (a killed worker) gets nothing.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, index: int, model: str, content: str) -> bytes:
        """The reply body to call number `index` (from 0, in the order calls arrived)."""
        time.sleep(self.latency)
        return reply(f"answer to {content}").content

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
