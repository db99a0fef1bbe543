import asyncio
import random
from types import SimpleNamespace

import pytest

from evalsite.core import pacing
from evalsite.core.pacing import BACKOFF_CAP_S, RETRY_AFTER_CAP_S, Limits, ModelGate, backoff_delay


def test_backoff_grows_exponentially_with_jitter_and_a_cap():
    rng = random.Random(1)
    for attempt in range(1, 10):
        ceiling = min(BACKOFF_CAP_S, 2 ** (attempt - 1))
        delay = backoff_delay(attempt, rng=rng)
        assert ceiling / 2 <= delay <= ceiling


def test_retry_after_is_honoured_up_to_a_bound():
    assert backoff_delay(1, 7.5, rng=random.Random(0)) == 7.5
    assert backoff_delay(1, 10_000, rng=random.Random(0)) == RETRY_AFTER_CAP_S


def test_a_limit_is_split_between_shards():
    assert Limits(8, 120).share(2) == Limits(4, 60)
    assert Limits(1, 1).share(4) == Limits(1, 1)


def test_the_shares_of_a_limit_never_add_up_to_more_than_it():
    # docs/running.md: "at most --concurrency calls per model" however many shards run it.
    for limit in range(1, 20):
        for parts in range(1, 6):
            shares = [Limits(limit, limit).share(parts, index) for index in range(parts)]
            assert sum(s.max_concurrency for s in shares) == limit
            assert sum(s.requests_per_minute for s in shares) == limit
            assert (
                max(s.max_concurrency for s in shares) - min(s.max_concurrency for s in shares) <= 1
            )  # the first shards take the remainder
    assert [Limits(1).share(2, i).max_concurrency for i in (0, 1)] == [1, 0]
    assert [Limits(3).share(2, i).max_concurrency for i in (0, 1)] == [2, 1]
    assert Limits(1).share(2, 1).idle and not Limits(1).share(2, 0).idle
    assert Limits(8, None).share(3, 2) == Limits(2, None)


def test_a_run_is_queued_as_no_more_shards_than_its_limit_has_calls():
    assert [Limits(n).shards(2) for n in (1, 2, 8)] == [1, 2, 2]
    assert Limits(8, 1).shards(4) == 1


def test_the_gate_holds_concurrency_and_spaces_starts(monkeypatch):
    # The gate's clock stands still and its waits are recorded, not slept: the spacing is
    # read from what the gate asks for, never measured on a shared machine.
    waits: list[float] = []

    async def recorded_sleep(delay: float) -> None:
        waits.append(delay)
        await asyncio.sleep(0)

    monkeypatch.setattr(pacing, "time", SimpleNamespace(monotonic=lambda: 100.0))
    monkeypatch.setattr(
        pacing,
        "asyncio",
        SimpleNamespace(Semaphore=asyncio.Semaphore, Lock=asyncio.Lock, sleep=recorded_sleep),
    )
    gate = ModelGate(Limits(max_concurrency=2, requests_per_minute=600))  # one start per 0.1 s
    in_flight = peak = 0

    async def call():
        nonlocal in_flight, peak
        async with gate:
            in_flight += 1
            peak = max(peak, in_flight)
            for _ in range(3):
                await asyncio.sleep(0)  # the call is in flight while the others queue
            in_flight -= 1

    async def main():
        await asyncio.gather(*(call() for _ in range(5)))

    asyncio.run(main())
    assert peak == 2
    # The first call starts at once; each later one waits its turn, 0.1 s after the one before.
    assert waits == pytest.approx([0.1, 0.2, 0.3, 0.4])
