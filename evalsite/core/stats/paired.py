"""Two runs of one suite compared unit by unit (a unit is a task, case and repeat), §15.

Pairing removes the between-case spread that two independent samples would carry: a hard
case is hard in both runs. The change in a mean (win-rate, scorecard score) gets a seeded
percentile bootstrap that resamples units, the same draw for both runs; the change in a
pass rate gets McNemar's exact test on the units that passed in one run only.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from evalsite.core.stats.bootstrap import (
    LEVEL,
    cluster_index,
    cluster_totals,
    percentile_interval,
    resampled_means,
    tail_p,
)
from evalsite.core.stats.pairs import MIN_N_FOR_INTERVAL
from evalsite.core.stats.record import Record

PAIRED_RESAMPLES = 2000


@dataclass(frozen=True)
class PairedDelta(Record):
    n: int  # units in both runs
    before: float | None  # the mean over those units in A
    after: float | None
    delta: float | None  # after − before
    ci: tuple[float, float] | None  # percentile bootstrap; None below MIN_N_FOR_INTERVAL
    level: float
    p_value: float | None = None  # two-sided, from the same resamples; None without an interval


def paired_bootstrap(
    before: Sequence[float],
    after: Sequence[float],
    *,
    seed: int,
    clusters: Sequence[Hashable] | None = None,
    resamples: int = PAIRED_RESAMPLES,
    level: float = LEVEL,
    min_n: int = MIN_N_FOR_INTERVAL,
) -> PairedDelta:
    """Δ mean from ``before`` to ``after`` (aligned: item i is one unit in both), with the
    ``level`` percentile interval of ``resamples`` resamples drawn by
    ``numpy.random.default_rng(seed).integers(0, m, m)`` one resample after another.

    Without ``clusters`` the m = n units are resampled. With them (each unit's cluster,
    e.g. its case) the m clusters are, each with all its units, and a resample's Δ is the
    mean over the units it holds: repeats of one case share its prompt, so they are not
    independent draws, and resampling them one by one would make the interval too narrow.
    With one unit a cluster the two are the same draw."""
    a, b = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"{a.size} and {b.size} values: a paired comparison needs one each")
    n = a.size
    if n == 0:
        return PairedDelta(0, None, None, None, None, level)
    differences = b - a
    ci = p_value = None
    if n >= min_n:
        sums, sizes = cluster_totals(differences, cluster_index(clusters, n))
        means = resampled_means(sums, sizes, resamples=resamples, seed=seed)
        ci, p_value = percentile_interval(means, level), bootstrap_p(means)
    mean_a, mean_b = math.fsum(a) / n, math.fsum(b) / n
    return PairedDelta(n, mean_a, mean_b, math.fsum(differences) / n, ci, level, p_value)


def bootstrap_p(means: np.ndarray) -> float:
    """Two-sided p of "no change" read from the resampled Δs: twice the smaller share at
    or beyond 0, each counted as (k + 1) / (R + 1) so that it is never 0. It is below
    1 − level exactly when the percentile interval leaves 0 out (up to one resample), so
    the list a Holm correction reads agrees with the intervals shown."""
    below, above = tail_p(means, 0.0, below=True), tail_p(means, 0.0, below=False)
    return min(1.0, 2 * min(below, above))


@dataclass(frozen=True)
class McNemar(Record):
    n: int  # units in both runs
    before: float | None  # pass rate in A over those units
    after: float | None
    delta: float | None
    lost: int  # passed in A, failed in B
    gained: int  # failed in A, passed in B
    p_value: float | None  # exact two-sided; None without units


def mcnemar_exact(before: Sequence[bool], after: Sequence[bool]) -> McNemar:
    """McNemar's exact test of a change in pass rate: under no change, each unit that
    passed in one run only is equally likely to be a loss or a gain, so
    p = min(1, 2·P(X ≤ min(lost, gained))), X ~ Binomial(lost + gained, ½)."""
    if len(before) != len(after):
        raise ValueError(f"{len(before)} and {len(after)} verdicts: a pair needs one each")
    n = len(before)
    if n == 0:
        return McNemar(0, None, None, None, 0, 0, None)
    lost = sum(1 for a, b in zip(before, after, strict=True) if a and not b)
    gained = sum(1 for a, b in zip(before, after, strict=True) if b and not a)
    p_value = min(1.0, 2 * _binomial_half_cdf(min(lost, gained), lost + gained))
    passed_a, passed_b = sum(map(bool, before)), sum(map(bool, after))
    return McNemar(n, passed_a / n, passed_b / n, (passed_b - passed_a) / n, lost, gained, p_value)


def _binomial_half_cdf(k: int, n: int) -> float:
    """P(X ≤ k) for X ~ Binomial(n, ½), summed in log space: exact big-integer sums take
    seconds once thousands of units changed verdict; this is good to ~1e-12."""
    logs = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                     for i in range(k + 1)]) - n * math.log(2)  # fmt: skip
    top = logs.max()
    return float(math.exp(top) * np.exp(logs - top).sum())
