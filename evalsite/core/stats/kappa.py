"""Cohen's kappa between the human consensus and the judge (SPEC §9).

By convention rater A is the human consensus and rater B the judge, so the confusion matrix
has humans as rows and the judge as columns; kappa and its variance are symmetric in the two.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from evalsite.core.stats.bootstrap import percentile_interval, resample_counts
from evalsite.core.stats.pairs import CATEGORIES
from evalsite.core.stats.record import Record

Z_95 = NormalDist().inv_cdf(0.975)  # 1.959964…
MIN_N_PER_TASK = 5
_BANDS = ((0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"))


def kappa_band(kappa: float | None) -> str | None:
    """The Landis–Koch band of ``kappa``; None when kappa is undefined."""
    if kappa is None:
        return None
    if kappa < 0:
        return "poor"
    return next((band for bound, band in _BANDS if kappa <= bound), "almost perfect")


@dataclass(frozen=True)
class Kappa(Record):
    n: int
    kappa: float | None  # None when undefined (no pairs, or p_e = 1), never 0 for that
    p_o: float | None  # observed agreement
    p_e: float | None  # agreement expected by chance from the two raters' marginals
    agreement: float | None  # p_o, shown beside kappa
    se: float | None  # asymptotic standard error (Fleiss, Cohen & Everitt 1969)
    ci: tuple[float, float] | None  # kappa ± z·se, clipped to [-1, 1]
    band: str | None
    confusion: list[list[int]]  # rows rater A (human), columns rater B (judge)


def confusion_matrix(
    rater_a: Sequence[str], rater_b: Sequence[str], *, categories: Sequence[str] = CATEGORIES
) -> list[list[int]]:
    """Counts of (A's category, B's category), rows A, columns B, in ``categories`` order.
    ValueError for sequences of different lengths or a category not in ``categories``."""
    if len(rater_a) != len(rater_b):
        raise ValueError(f"the raters rated {len(rater_a)} and {len(rater_b)} items")
    index = {category: i for i, category in enumerate(categories)}
    table = [[0] * len(categories) for _ in categories]
    for a, b in zip(rater_a, rater_b, strict=True):
        for label in (a, b):
            if label not in index:
                raise ValueError(f"unknown category {label!r}; expected one of {tuple(index)}")
        table[index[a]][index[b]] += 1
    return table


def cohen_kappa(
    rater_a: Sequence[str], rater_b: Sequence[str], *, categories: Sequence[str] = CATEGORIES
) -> Kappa:
    """Unweighted Cohen's kappa, (p_o − p_e) / (1 − p_e), with its asymptotic interval."""
    confusion = confusion_matrix(rater_a, rater_b, categories=categories)
    table = np.asarray(confusion, dtype=np.int64)
    n = int(table.sum())
    if n == 0:
        return Kappa(0, None, None, None, None, None, None, None, confusion)
    p_o = float(np.trace(table)) / n
    p_e = float(_chance(table)) / n**2
    value = float(_kappas(table))
    if math.isnan(value):
        return Kappa(n, None, p_o, p_e, p_o, None, None, None, confusion)
    se = _standard_error(table, value, p_e)
    ci = (max(-1.0, value - Z_95 * se), min(1.0, value + Z_95 * se))
    return Kappa(n, value, p_o, p_e, p_o, se, ci, kappa_band(value), confusion)


def bootstrap_kappa_ci(
    rater_a: Sequence[str],
    rater_b: Sequence[str],
    *,
    seed: int,
    resamples: int = 2000,
    categories: Sequence[str] = CATEGORIES,
) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of kappa, resampling rated items with
    ``numpy.random.default_rng(seed)``. Resamples where kappa is undefined are dropped; None
    when n < 2 or kappa is undefined in every resample."""
    table = np.asarray(confusion_matrix(rater_a, rater_b, categories=categories), np.int64)
    if table.sum() < 2:
        return None
    k = len(categories)
    cells = resample_counts(table.ravel(), resamples=resamples, rng=np.random.default_rng(seed))
    return percentile_interval(_kappas(cells.reshape(resamples, k, k)))


def _chance(tables: np.ndarray) -> np.ndarray:
    """n² · p_e of each (…, k, k) count table, as exact integers."""
    return (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1)


def _kappas(tables: np.ndarray) -> np.ndarray:
    """Kappa of each (…, k, k) count table; NaN where p_e = 1 or n = 0.

    Kappa is (n·agree − n²p_e) / (n² − n²p_e): both integers, so the undefined case is found
    exactly and a kappa that is 0 (a constant rater) comes out exactly 0.
    """
    n = tables.sum(axis=(-2, -1))
    chance = _chance(tables)
    numerator = n * np.trace(tables, axis1=-2, axis2=-1) - chance
    denominator = n * n - chance
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


def _standard_error(table: np.ndarray, kappa: float, p_e: float) -> float:
    """Large-sample standard error of kappa (Fleiss, Cohen & Everitt 1969, not under the null):

    var = [Σᵢ pᵢᵢ(1 − (pᵢ. + p.ᵢ)(1 − κ))² + (1 − κ)² Σ_{i≠j} pᵢⱼ(p.ᵢ + pⱼ.)²
           − (κ − p_e(1 − κ))²] / (n (1 − p_e)²)
    """
    n = int(table.sum())
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    on_diagonal = np.sum(np.diag(p) * (1 - (rows + cols) * (1 - kappa)) ** 2)
    off = p * (cols[:, None] + rows[None, :]) ** 2
    off_diagonal = (1 - kappa) ** 2 * (off.sum() - np.trace(off))
    variance = (on_diagonal + off_diagonal - (kappa - p_e * (1 - kappa)) ** 2) / (
        n * (1 - p_e) ** 2
    )
    return math.sqrt(max(float(variance), 0.0))  # rounding can leave a tiny negative


@dataclass(frozen=True)
class TaskKappa(Record):
    task: str
    n: int
    agreement: float | None
    kappa: float | None  # None below the minimum n (low_n) or when undefined
    band: str | None
    low_n: bool


def per_task_kappa(
    rows: Iterable[tuple[str, str, str]], *, min_n: int = MIN_N_PER_TASK
) -> list[TaskKappa]:
    """Kappa per task from (task, human, judge) rows, worst first.

    A task with fewer than ``min_n`` rows shows agreement only, flagged ``low_n``. Tasks with
    a kappa come first, lowest kappa first; then the rest, lowest agreement first.
    """
    grouped: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for task, human, judge in rows:
        grouped[task][0].append(human)
        grouped[task][1].append(judge)
    tasks = []
    for task, (humans, judges) in grouped.items():
        result = cohen_kappa(humans, judges)
        low_n = result.n < min_n
        kappa = None if low_n else result.kappa
        tasks.append(TaskKappa(task, result.n, result.agreement, kappa, kappa_band(kappa), low_n))
    return sorted(tasks, key=_worst_first)


def _worst_first(task: TaskKappa) -> tuple[bool, float, float, str]:
    return (task.kappa is None, task.kappa or 0.0, task.agreement or 0.0, task.task)
