"""How fast the engine may call a model: retry backoff and per-model limits (asyncio)."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

MAX_ATTEMPTS = 4
BACKOFF_BASE_S = 1.0
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 60.0
# Calls in flight per model across a run, unless the run or EVALSITE_MAX_CONCURRENCY says.
DEFAULT_MAX_CONCURRENCY = 8


def backoff_delay(
    attempt: int,
    retry_after: float | None = None,
    *,
    rng: random.Random | None = None,
    base: float = BACKOFF_BASE_S,
) -> float:
    """Seconds to wait before retry number `attempt` (1-based).

    Exponential with jitter (half to all of base * 2^(attempt-1), capped); a provider's
    Retry-After is honoured up to RETRY_AFTER_CAP_S and never undercut by the jitter.
    """
    rng = rng or random.Random()
    ceiling = min(BACKOFF_CAP_S, base * 2 ** (attempt - 1))
    delay: float = ceiling * (0.5 + rng.random() / 2)
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(retry_after, RETRY_AFTER_CAP_S))
    return delay


@dataclass(frozen=True)
class Limits:
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    requests_per_minute: int | None = None

    def share(self, parts: int, index: int = 0) -> Limits:
        """Shard `index`'s part of this limit split between `parts` shards running at once.
        The parts add up to the limit, never more: the first shards take the remainder, and
        a shard past the limit's count gets 0 (:attr:`idle`: it makes no calls)."""
        parts = max(1, parts)
        rpm = self.requests_per_minute
        return Limits(
            _part(self.max_concurrency, parts, index),
            None if rpm is None else _part(rpm, parts, index),
        )

    @property
    def idle(self) -> bool:
        """A share with no call to make (see :meth:`share`)."""
        return self.max_concurrency < 1 or self.requests_per_minute == 0

    def shards(self, wanted: int) -> int:
        """How many of `wanted` shards to run: no more than the limit has calls, so none
        is idle."""
        rpm = self.requests_per_minute
        return max(1, min(wanted, self.max_concurrency, wanted if rpm is None else rpm))


def _part(limit: int, parts: int, index: int) -> int:
    return limit // parts + (1 if index < limit % parts else 0)


class ModelGate:
    """At most `max_concurrency` calls in flight, started at most `requests_per_minute`."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self._slots = asyncio.Semaphore(limits.max_concurrency)
        self._interval = 60.0 / limits.requests_per_minute if limits.requests_per_minute else 0.0
        self._next_start = 0.0
        self._spacing = asyncio.Lock()

    async def __aenter__(self) -> ModelGate:
        await self._slots.acquire()
        if self._interval:
            await self._wait_turn()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._slots.release()

    async def _wait_turn(self) -> None:
        async with self._spacing:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + self._interval
        if start > now:
            await asyncio.sleep(start - now)
