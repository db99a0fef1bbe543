"""Generated rating data for checking the statistics against reference implementations."""

from __future__ import annotations

import numpy as np

from evalsite.core.stats.pairs import CATEGORIES


def rated_pairs(seed: int) -> tuple[list[str], list[str]]:
    """(human, judge) categories for a seeded data set of varied size, skew and agreement."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 3, 5, 8, 13, 30, 100, 500]))
    concentration = float(rng.choice([0.2, 1.0, 5.0]))  # low: one category dominates
    humans = rng.choice(CATEGORIES, n, p=rng.dirichlet([concentration] * 3))
    others = rng.choice(CATEGORIES, n, p=rng.dirichlet([concentration] * 3))
    judges = np.where(rng.random(n) < rng.uniform(0, 1), humans, others)
    return [str(h) for h in humans], [str(j) for j in judges]


def ppi_py_stratified(strata) -> tuple[float, float]:
    """The reference for the corrected win-rate: ppi_py's classical PPI (lam=1) in each
    task, from (human, judge, unlabelled judge, judged pairs) per task, weighted by the
    task's share of the judged pairs; the standard error is what each 95% interval implies."""
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate  # a test-only dependency

    from evalsite.core.stats.kappa import Z_95

    total = sum(pairs for *_, pairs in strata)
    estimate = variance = 0.0
    for human, judge, rest, pairs in strata:
        y, f, u = (np.asarray(values, dtype=float) for values in (human, judge, rest))
        low, high = ppi_mean_ci(y, f, u, alpha=0.05, lam=1)
        weight = pairs / total
        estimate += weight * float(np.squeeze(ppi_mean_pointestimate(y, f, u, lam=1)))
        variance += (weight * float(np.squeeze(high - low)) / (2 * Z_95)) ** 2
    return estimate, float(np.sqrt(variance))
