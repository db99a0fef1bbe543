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
    max_concurrency: int = 8
    requests_per_minute: int | None = None

    def share(self, parts: int) -> Limits:
        """This limit split between `parts` shards running at once (each gets at least 1)."""
        parts = max(1, parts)
        rpm = self.requests_per_minute
        return Limits(
            max(1, self.max_concurrency // parts),
            None if rpm is None else max(1, rpm // parts),
        )


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
