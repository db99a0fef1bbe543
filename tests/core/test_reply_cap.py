"""What an HTTP provider's reply can do is bounded (issue 25 items 7 and 10).

Its body is read up to MAX_REPLY_BYTES, the command provider's cap too, and no further: a
larger reply is a ``malformed`` error naming the cap, found while the body streams in, so
the rest is never read. Its usage counts are at most MAX_USAGE_TOKENS each; a negative or
non-number count is no usage.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import threading

import httpx
import pytest

from evalsite.core.pricing import MAX_USAGE_TOKENS
from evalsite.core.problems import SuiteError
from evalsite.core.providers import ErrorKind, ProviderError, make_client
from evalsite.core.providers.anthropic import AnthropicProvider
from evalsite.core.providers.base import MAX_REPLY_BYTES
from evalsite.core.providers.command import MAX_OUTPUT_BYTES
from evalsite.core.providers.google import GoogleProvider
from evalsite.core.providers.openai import compatible_provider, openai_provider
from evalsite.core.suite_schema import MAX_TOKENS
from evalsite.core.suites import parse_suite
from tests.helpers.providers import ThreadedServer, call, fail, make_request

HUGE = 50 * 1024 * 1024  # what the server would send if the client read it all
CHUNK = 64 * 1024


class Streaming(ThreadedServer):
    """An OpenAI-compatible server that answers every POST with an endless JSON string,
    HUGE bytes at most, and counts the bytes it got to write before the client hung up.
    With `declared`, the reply says its length up front."""

    def __init__(self, *, declared: bool = False, status: int = 200):
        self.written = 0
        self.done = threading.Event()
        super().__init__(self._answer)
        self.declared, self.status = declared, status

    def _answer(self, handler) -> None:
        handler.rfile.read(int(handler.headers["content-length"]))
        handler.send_response(self.status)
        handler.send_header("content-type", "application/json")
        if self.declared:
            handler.send_header("content-length", str(HUGE))
        handler.send_header("connection", "close")
        handler.end_headers()
        try:
            handler.wfile.write(b'{"choices": [{"message": {"content": "')
            while self.written < HUGE:
                handler.wfile.write(b"x" * CHUNK)
                self.written += CHUNK
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.done.set()


def refused(url: str) -> ProviderError:
    """The error of one call to `url` through the client the engine uses (aiohttp's pool)."""

    async def go():
        provider = compatible_provider("local", url, None)
        async with make_client() as client:
            await provider.complete(make_request("local/m", timeout_s=30), client)

    with pytest.raises(ProviderError) as info:
        asyncio.run(go())
    return info.value


def test_one_cap_holds_for_http_replies_and_command_output():
    assert MAX_REPLY_BYTES == MAX_OUTPUT_BYTES == 10 * 1024 * 1024


@pytest.mark.parametrize("declared", [False, True], ids=["streamed", "declared"])
def test_a_reply_over_the_cap_is_an_error_naming_it_and_the_rest_is_never_read(declared):
    with Streaming(declared=declared) as server:
        error = refused(server.url)
        assert server.done.wait(30), "the server was still writing: the client kept reading"

    assert error.kind == ErrorKind.MALFORMED and not error.retryable
    assert error.message == (
        "local: the reply is over the 10 MiB reply cap (10,485,760 bytes); "
        "evalsite stopped reading it"
    )
    # The client hung up at the cap (or, told the length, before reading any): what the
    # server got to write beyond it sat in the sockets' buffers, never in evalsite.
    assert server.written < HUGE
    if not declared:
        assert server.written > MAX_REPLY_BYTES - CHUNK


def test_an_error_reply_over_the_cap_is_cut_off_the_same_way():
    with Streaming(status=500) as server:
        error = refused(server.url)
        assert server.done.wait(30)

    assert error.kind == ErrorKind.MALFORMED and "10 MiB reply cap" in error.message
    assert server.written < HUGE


def test_a_compressed_reply_is_held_to_the_cap_as_it_unpacks():
    """A gzip bomb: 10 KiB on the wire, 11 MiB unpacked."""
    body = b'{"choices": [{"message": {"content": "' + b"x" * (MAX_REPLY_BYTES + 2**20) + b'"}}]}'
    packed = gzip.compress(body)
    assert len(packed) < 64 * 1024
    reply = httpx.Response(200, content=packed, headers={"content-encoding": "gzip"})

    error = fail(openai_provider("key"), make_request("openai/gpt-4o-mini"), reply)

    assert error.kind == ErrorKind.MALFORMED and "10 MiB reply cap" in error.message


def test_a_reply_just_under_the_cap_is_an_answer():
    text = "y" * (MAX_REPLY_BYTES - 200)
    body = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}]}
    reply = httpx.Response(200, content=json.dumps(body).encode())

    completion, _ = call(openai_provider("key"), make_request("openai/gpt-4o-mini"), reply)

    assert completion.text == text


# --- usage ------------------------------------------------------------------------------

HUGE_COUNTS = ["1" + "0" * 30, "1e308", "1e400", "Infinity"]
NOT_COUNTS = ["-5", "-1e400", "-Infinity", "NaN"]

# Each adapter's reply with one output-token count written raw (JSON as a provider sends it).
REPLIES = {
    "openai": (
        openai_provider("key"),
        "openai/gpt-4o-mini",
        '{"choices": [{"message": {"content": "hi"}}], '
        '"usage": {"prompt_tokens": 3, "completion_tokens": %s}}',
    ),
    "anthropic": (
        AnthropicProvider("key"),
        "anthropic/claude-haiku-4-5",
        '{"content": [{"type": "text", "text": "hi"}], '
        '"usage": {"input_tokens": 3, "output_tokens": %s}}',
    ),
    "google": (
        GoogleProvider("key"),
        "google/gemini-2.5-flash",
        '{"candidates": [{"content": {"parts": [{"text": "hi"}]}}], '
        '"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": %s}}',
    ),
}


def usage_of(adapter: str, count: str):
    provider, model, template = REPLIES[adapter]
    reply = httpx.Response(200, content=(template % count).encode())
    completion, _ = call(provider, make_request(model), reply)
    return completion.usage


@pytest.mark.parametrize("adapter", REPLIES)
@pytest.mark.parametrize("count", HUGE_COUNTS)
def test_a_count_too_large_to_store_is_counted_at_the_bound(adapter, count):
    usage = usage_of(adapter, count)

    assert (usage.input_tokens, usage.output_tokens) == (3, MAX_USAGE_TOKENS)


@pytest.mark.parametrize("adapter", REPLIES)
@pytest.mark.parametrize("count", NOT_COUNTS)
def test_a_negative_or_not_a_number_count_is_no_usage(adapter, count):
    assert usage_of(adapter, count) is None


@pytest.mark.parametrize("adapter", REPLIES)
def test_an_absent_or_non_numeric_count_is_still_zero(adapter):
    """What adapters always did: a usage block without the count, or with text in it."""
    assert usage_of(adapter, '"many"').output_tokens == 0
    assert usage_of(adapter, "12.7").output_tokens == 12


# --- max_tokens: how long a reply may be asked to be ------------------------------------

BIG_TOKENS_SUITE = """\
suite: big
version: 1
models: [openai/gpt-4o-mini, anthropic/claude-haiku-4-5@short]
defaults: {{max_tokens: {defaults}}}
judge: {{model: google/gemini-2.5-flash, max_tokens: {judge}}}
variants:
  short: {{params: {{max_tokens: {variant}}}}}
tasks:
  - id: t
    prompt: "Say {{{{w}}}}."
    max_tokens: {task}
    cases: [{{id: c, vars: {{w: hi}}}}]
"""
PLACES = {  # where each max_tokens is: its line and key
    "defaults": (4, "defaults.max_tokens"),
    "judge": (5, "judge.max_tokens"),
    "variant": (7, "variants.short.params.max_tokens"),
    "task": (11, "tasks[0].max_tokens"),
}


def suite_problems(**max_tokens: int) -> list[str]:
    values = dict.fromkeys(PLACES, 400) | max_tokens
    try:
        parse_suite(BIG_TOKENS_SUITE.format(**values).encode(), filename="big.yaml")
    except SuiteError as error:
        return [str(problem) for problem in error.problems]
    return []


@pytest.mark.parametrize("where", PLACES)
def test_a_max_tokens_past_the_bound_is_refused_at_its_line(where):
    assert MAX_TOKENS == 1_000_000
    assert suite_problems(**{where: MAX_TOKENS}) == []

    problems = suite_problems(**{where: 99999999999999999999})

    line, key = PLACES[where]
    assert problems == [
        f"big.yaml:{line}: {key}: must be a whole number of tokens from 1 to 1,000,000"
    ]
