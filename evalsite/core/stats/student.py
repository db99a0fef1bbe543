"""Student's t quantile for a whole number of degrees of freedom, without scipy.

A cluster-robust interval over G cases reads its width from t with G − 1 degrees of
freedom, as statsmodels does (``use_t=True``): with 30 cases the normal quantile makes a
"95%" interval of about 94%.
"""

from __future__ import annotations

import math

_ITERATIONS = 200


def t_two_sided(t: float, df: int) -> float:
    """P(|T| < t) for T ~ Student's t with ``df`` ≥ 1 degrees of freedom, by the closed form
    for whole df (Abramowitz & Stegun 26.7.3 and 26.7.4)."""
    theta = math.atan(t / math.sqrt(df))
    cos2 = math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if df % 2 == 1:
        if df == 1:
            return 2 * theta / math.pi
        for j in range(1, (df - 3) // 2 + 1):
            term *= cos2 * (2 * j) / (2 * j + 1)
            total += term
        return 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)
    for j in range(1, (df - 2) // 2 + 1):
        term *= cos2 * (2 * j - 1) / (2 * j)
        total += term
    return math.sin(theta) * total


def t_quantile(level: float, df: int) -> float:
    """t such that P(|T| < t) = ``level``: the half-width factor of a two-sided interval."""
    if df < 1:
        raise ValueError(f"{df} degrees of freedom: t needs at least 1")
    low, high = 0.0, 1.0
    while t_two_sided(high, df) < level:
        high *= 2
    for _ in range(_ITERATIONS):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if t_two_sided(middle, df) < level else (low, middle)
    return (low + high) / 2


def t_below(t: float, df: int) -> float:
    """P(T ≤ t) for T ~ Student's t with ``df`` ≥ 1 degrees of freedom: a one-sided p."""
    tail = (1 - t_two_sided(abs(t), df)) / 2
    return tail if t < 0 else 1 - tail
