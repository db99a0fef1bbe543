"""Seeded percentile bootstrap over counts of distinct items.

Resampling n items with replacement, where ``counts[k]`` of them are of kind k, yields kind
counts distributed Multinomial(n, counts / n). Every statistic here depends on its items only
through such counts (pair scores take five values, a kappa table has nine cells), so the
counts are drawn directly: the same bootstrap, at k numbers a resample instead of n.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

LEVEL = 0.95


def seed_from(text: str) -> int:
    """A 64-bit seed derived from ``text`` (e.g. the suite hash) by SHA-256."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def resample_counts(
    counts: Sequence[int] | np.ndarray, *, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """A (resamples, len(counts)) integer array: the count of each kind of item in each
    bootstrap resample of the ``sum(counts)`` items."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros((resamples, counts.size), dtype=np.int64)
    return rng.multinomial(total, counts / total, size=resamples)


def percentile_interval(estimates: np.ndarray, level: float = LEVEL) -> tuple[float, float] | None:
    """The central ``level`` percentile interval (linear interpolation) of the finite
    ``estimates``; NaN marks a resample where the statistic is undefined and is dropped.
    None when no estimate is finite."""
    finite = estimates[np.isfinite(estimates)]
    if finite.size == 0:
        return None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)
