"""Latency percentiles by nearest rank, worked out by hand."""

from __future__ import annotations

from evalsite.core.stats.latency import latency_percentiles


def test_one_to_twenty_gives_ten_and_nineteen():
    result = latency_percentiles(list(range(20, 0, -1)))
    assert (result.n, result.p50, result.p95) == (20, 10, 19)


def test_one_to_a_hundred_gives_fifty_and_ninety_five():
    result = latency_percentiles(range(1, 101))
    assert (result.p50, result.p95) == (50, 95)


def test_small_samples_take_the_rank_rounded_up():
    assert latency_percentiles([300]).to_dict() == {"n": 1, "p50": 300, "p95": 300}
    assert (latency_percentiles([5, 1]).p50, latency_percentiles([5, 1]).p95) == (1, 5)
    assert latency_percentiles([1.5, 2.5, 9.0]).p50 == 2.5


def test_no_values_give_no_percentiles():
    assert latency_percentiles([]).to_dict() == {"n": 0, "p50": None, "p95": None}
