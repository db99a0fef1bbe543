"""Generated rating data for checking the statistics against reference implementations."""

from __future__ import annotations

import numpy as np

from evalsite.core.stats import CATEGORIES


def rated_pairs(seed: int) -> tuple[list[str], list[str]]:
    """(human, judge) categories for a seeded data set of varied size, skew and agreement."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 3, 5, 8, 13, 30, 100, 500]))
    concentration = float(rng.choice([0.2, 1.0, 5.0]))  # low: one category dominates
    humans = rng.choice(CATEGORIES, n, p=rng.dirichlet([concentration] * 3))
    others = rng.choice(CATEGORIES, n, p=rng.dirichlet([concentration] * 3))
    judges = np.where(rng.random(n) < rng.uniform(0, 1), humans, others)
    return [str(h) for h in humans], [str(j) for j in judges]
