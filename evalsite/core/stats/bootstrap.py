"""Seeded bootstraps: over counts of distinct items, and over clusters (cases).

Resampling n items with replacement, where ``counts[k]`` of them are of kind k, yields kind
counts distributed Multinomial(n, counts / n). Every statistic here depends on its items only
through such counts (pair scores take five values, a kappa table has nine cells), so the
counts are drawn directly: the same bootstrap, at k numbers a resample instead of n.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from statistics import NormalDist
from typing import cast

import numpy as np

LEVEL = 0.95
FEW_CLUSTERS = 30  # below this many cases an interval uses BCa and says "few cases"
_NORMAL = NormalDist()
_CHUNK_CELLS = 4_000_000  # indices drawn at once: bounds memory on runs of many cases


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


def cluster_index(clusters: Sequence[Hashable] | None, units: int) -> np.ndarray:
    """Each unit's cluster as 0..m-1 in order of first appearance; one cluster per unit
    without ``clusters``."""
    if clusters is None:
        return np.arange(units)
    if len(clusters) != units:
        raise ValueError(f"{len(clusters)} clusters for {units} units")
    index: dict[Hashable, int] = {}
    return np.array([index.setdefault(cluster, len(index)) for cluster in clusters], dtype=int)


def cluster_totals(values: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster (``labels`` from :func:`cluster_index`): the sum of its values and its size."""
    m = int(labels.max()) + 1 if labels.size else 0
    return (
        np.bincount(labels, weights=values, minlength=m),
        np.bincount(labels, minlength=m).astype(float),
    )


def cluster_draws(m: int, *, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The one cluster resampler: ``resamples`` resamples of m clusters with replacement,
    drawn by ``numpy.random.default_rng(seed).integers(0, m, m)`` one resample after another,
    yielded in chunks of (k, m) cluster indices. A case's repeats and both judge orders are
    one cluster: they share a prompt, so they are not independent draws."""
    rng = np.random.default_rng(seed)
    step = max(1, _CHUNK_CELLS // max(m, 1))
    for done in range(0, resamples, step):
        yield rng.integers(0, m, size=(min(step, resamples - done), m))


def draw_counts(drawn: np.ndarray, m: int) -> np.ndarray:
    """How often each of the m clusters is in each resample of ``drawn`` (k, m)."""
    k = drawn.shape[0]
    offsets = drawn + m * np.arange(k)[:, None]
    return np.bincount(offsets.ravel(), minlength=k * m).reshape(k, m)


def resampled_means(
    sums: np.ndarray, sizes: np.ndarray, *, resamples: int, seed: int
) -> np.ndarray:
    """The mean over the units of each cluster resample (clusters' ``sums`` and ``sizes``)."""
    m = sums.size
    # Clusters of one size (one repeat a case): every resample holds m of them, a total
    # of m * size units, exactly, so it is not summed again from each draw.
    same = m > 0 and bool(np.all(sizes == sizes[0]))
    means = [
        sums[drawn].sum(axis=1) / (float(m * sizes[0]) if same else sizes[drawn].sum(axis=1))
        for drawn in cluster_draws(m, resamples=resamples, seed=seed)
    ]
    return np.concatenate(means) if means else np.empty(0)


def jackknife_means(sums: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The mean over the units with each cluster left out in turn."""
    return cast(np.ndarray, (sums.sum() - sums) / (sizes.sum() - sizes))


def bca_interval(
    estimates: np.ndarray, point: float, jackknife: np.ndarray, level: float = LEVEL
) -> tuple[float, float] | None:
    """Efron's bias-corrected and accelerated interval from bootstrap ``estimates``, the
    ``point`` estimate and leave-one-cluster-out ``jackknife`` estimates: the percentile
    interval moved for the estimate's bias and skew, which a percentile interval over few
    clusters misses. Falls back to the percentile interval where BCa is undefined."""
    finite = estimates[np.isfinite(estimates)]
    if finite.size == 0:
        return None
    below = (np.sum(finite < point) + 0.5 * np.sum(finite == point)) / finite.size
    if not 0 < below < 1:
        return percentile_interval(finite, level)
    z0 = _NORMAL.inv_cdf(below)
    spread = jackknife.mean() - jackknife
    denominator = 6 * (np.sum(spread**2) ** 1.5)
    acceleration = np.sum(spread**3) / denominator if denominator > 0 else 0.0
    adjusted = [
        _NORMAL.cdf(z0 + (z0 + z) / (1 - acceleration * (z0 + z)))
        for z in (_NORMAL.inv_cdf((1 - level) / 2), _NORMAL.inv_cdf((1 + level) / 2))
    ]
    low, high = np.percentile(finite, np.array(adjusted) * 100)
    return float(low), float(high)


def cluster_mean_interval(
    values: np.ndarray,
    labels: np.ndarray,
    *,
    seed: int,
    resamples: int,
    min_n: int,
    constant: Callable[[float], str],
    empty: str,
) -> tuple[tuple[float, float] | None, str | None, str | None]:
    """(interval, method, why there is none) of the mean of ``values`` over the clusters of
    ``labels``: the percentile interval from :data:`FEW_CLUSTERS` clusters, BCa below, none
    below ``min_n`` clusters (``empty`` without any) or when every value is the same
    (``constant(value)`` says so): a zero-width interval would claim certainty."""
    cases = len(set(labels.tolist()))
    if cases == 0:
        return None, None, empty
    if cases < min_n:
        return None, None, too_few_cases(cases, min_n)
    if np.all(values == values[0]):
        return None, None, constant(float(values[0]))
    sums, sizes = cluster_totals(values, labels)
    estimates = resampled_means(sums, sizes, resamples=resamples, seed=seed)
    if cases >= FEW_CLUSTERS:
        return percentile_interval(estimates), "percentile", None
    point = float(sums.sum() / sizes.sum())
    return bca_interval(estimates, point, jackknife_means(sums, sizes)), "bca", None


def too_few_cases(cases: int, min_n: int) -> str:
    """Why a figure over ``cases`` cases has no interval (its repeats count once)."""
    return f"too few cases: {cases}; an interval needs {min_n}"


def tail_p(means: np.ndarray, value: float, *, below: bool) -> float:
    """A one-sided bootstrap p read from resampled ``means``: (k + 1) / (R + 1), k the
    resamples at or below ``value`` (``below``) or at or above it; never 0."""
    hits = np.count_nonzero(means <= value) if below else np.count_nonzero(means >= value)
    return float((hits + 1) / (means.size + 1))


def below_floor_p(
    values: np.ndarray, labels: np.ndarray, *, floor: float, seed: int, resamples: int
) -> float:
    """One-sided p of "the mean over the clusters of ``labels`` is at or above ``floor``":
    the share of cluster resamples whose mean reaches it (:func:`tail_p`). The same draws
    as :func:`cluster_mean_interval`'s with the same seed, so a p below 0.025 goes with an
    interval below the floor."""
    sums, sizes = cluster_totals(values, labels)
    means = resampled_means(sums, sizes, resamples=resamples, seed=seed)
    return tail_p(means, floor, below=False)
