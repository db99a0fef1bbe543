"""The same requests without the engine: plain fan-outs in this process, and the raw floor.

Each sends the JSON bodies the engine sent for a run (built by the same adapter) to the mock
at concurrency C and returns its wall time, errors, CPU per request and the most requests
the mock saw at once:

- ``httpx``: one ``httpx.AsyncClient`` with C pooled connections, a semaphore of C;
- ``aiohttp``: one ``aiohttp.ClientSession`` on a ``TCPConnector(limit=C)``, a semaphore of C;
- ``raw``: C keep-alive connections written by hand over asyncio streams, no HTTP library:
  the floor this machine and the mock allow.

Issue 31 compares whole processes too: :func:`measure_process_fan_out` runs this file as a
script, ``python bench/fanout.py KIND URL BODIES.json C``, which imports its client, reads the
bodies, sends them and prints ``{"wall_s": …, "errors": …}``; the figure is the script's wall
time from spawn to exit, as ``evalsite run``'s is.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from procs import Processes, own_cpu_s

KINDS = ("httpx", "aiohttp", "raw")


@dataclass
class FanOutResult:
    requests: int
    wall_s: float
    errors: int
    cpu_ms_per_request: float
    peak_in_flight: int


@dataclass
class ProcessFanOut:
    """A plain fan-out as a whole process: spawn to exit, as a user waits for a command."""

    kind: str
    requests: int
    process_wall_s: float
    cpu_s: float
    errors: int
    max_rss_mb: float


def mock_stats(base: str, *, reset: bool = False) -> dict:
    import httpx

    if reset:
        return httpx.post(f"{base}/stats/reset", timeout=10).json()
    return httpx.get(f"{base}/stats", timeout=10).json()


def request_bodies(run_id: str, model: str) -> tuple[str, list[dict]]:
    """The URL and JSON bodies the engine sent for the answers of `run_id`."""
    from evalsite.core.providers import Request, build_provider
    from runs.models import Answer, Endpoint

    provider = build_provider(model, env=os.environ, endpoints=Endpoint.objects.configs())
    bodies, url = [], ""
    for stored in Answer.objects.filter(run_id=run_id).values_list("request", flat=True):
        request = provider.prepare(Request(**stored))
        url = provider.url(request)
        bodies.append(provider.body(request))
    return url, bodies


def measure_fan_out(kind: str, url: str, bodies: list[dict], concurrency: int, mock: str):
    mock_stats(mock, reset=True)
    before = own_cpu_s()
    wall, errors = asyncio.run(_CLIENTS[kind](url, bodies, concurrency))
    cpu = own_cpu_s() - before
    stats = mock_stats(mock)
    per_request_ms = cpu / len(bodies) * 1000
    return FanOutResult(len(bodies), wall, errors, per_request_ms, stats["max_in_flight"])


def measure_process_fan_out(
    processes: Processes, kind: str, url: str, bodies: list[dict], concurrency: int, folder: Path
) -> ProcessFanOut:
    """This file as a script in a process of its own, timed from spawn to exit."""
    path = folder / f"bodies-c{concurrency}.json"
    path.write_text(json.dumps(bodies), "utf-8")
    name = f"plain-{kind}-c{concurrency}"
    argv = [sys.executable, str(Path(__file__)), kind, url, str(path), str(concurrency)]
    started = time.time()
    exited = processes.reap(processes.start(name, argv, dict(os.environ)), started)
    try:
        errors = json.loads(processes.tail(name, 1))["errors"]
    except (ValueError, KeyError):
        errors = len(bodies)  # it did not finish: every request counts as failed
    return ProcessFanOut(kind, len(bodies), exited.wall_s, exited.cpu_s, errors,
                         exited.max_rss_mb)  # fmt: skip


async def _gather(one, bodies: list[dict]) -> tuple[float, int]:
    started = time.perf_counter()
    results = await asyncio.gather(*(one(b) for b in bodies), return_exceptions=True)
    return time.perf_counter() - started, sum(isinstance(r, BaseException) for r in results)


async def _httpx(url: str, bodies: list[dict], concurrency: int) -> tuple[float, int]:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    slots = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def one(body: dict) -> None:
            async with slots:
                response = await client.post(url, json=body)
                response.raise_for_status()
                response.json()

        return await _gather(one, bodies)


async def _aiohttp(url: str, bodies: list[dict], concurrency: int) -> tuple[float, int]:
    import aiohttp

    slots = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def one(body: dict) -> None:
            async with slots, session.post(url, json=body) as response:
                response.raise_for_status()
                await response.json()

        return await _gather(one, bodies)


async def _raw(url: str, bodies: list[dict], concurrency: int) -> tuple[float, int]:
    """`concurrency` keep-alive connections written by hand: no HTTP library at all."""
    host_port = url.split("//", 1)[1].split("/", 1)
    host, port = host_port[0].rsplit(":", 1)
    path = "/" + host_port[1]
    queue = iter(bodies)
    errors = 0

    async def connection() -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for body in queue:
                data = json.dumps(body).encode()
                head = (
                    f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
                )
                writer.write(head.encode() + data)
                reply = await reader.readuntil(b"\r\n\r\n")
                lines = reply.decode("latin-1").split("\r\n")
                length = next(
                    int(line.split(":", 1)[1])
                    for line in lines
                    if line.lower().startswith("content-length:")
                )
                json.loads(await reader.readexactly(length))
                errors += " 200 " not in lines[0] + " "
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(min(concurrency, len(bodies)))))
    return time.perf_counter() - started, errors


_CLIENTS = {"httpx": _httpx, "aiohttp": _aiohttp, "raw": _raw}


if __name__ == "__main__":
    kind, url, bodies_path, level = sys.argv[1:5]
    loaded = json.loads(Path(bodies_path).read_text("utf-8"))
    wall, failed = asyncio.run(_CLIENTS[kind](url, loaded, int(level)))
    print(json.dumps({"wall_s": wall, "errors": failed}))
