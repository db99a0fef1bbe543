"""Latency percentiles by nearest rank (SPEC §9)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalsite.core.stats.record import Record


@dataclass(frozen=True)
class Latency(Record):
    n: int
    p50: int | float | None  # None without values
    p95: int | float | None


def nearest_rank(sorted_values: Sequence[int | float], percent: int) -> int | float | None:
    """The value at 1-based rank ⌈percent/100 · n⌉ of ``sorted_values``; None when empty."""
    if not sorted_values:
        return None
    rank = max(1, -(-percent * len(sorted_values) // 100))  # integer ceiling: no float error
    return sorted_values[rank - 1]


def latency_percentiles(values_ms: Sequence[int | float]) -> Latency:
    """p50 and p95 of ``values_ms`` by nearest rank, each one of the values."""
    ordered = sorted(values_ms)
    return Latency(len(ordered), nearest_rank(ordered, 50), nearest_rank(ordered, 95))
