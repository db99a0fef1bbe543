"""Cohen's kappa between the human consensus and the judge (SPEC §9).

By convention rater A is the human consensus and rater B the judge, so the confusion matrix
has humans as rows and the judge as columns; kappa and its variance are symmetric in the two.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import cast

import numpy as np

from evalsite.core.stats.bootstrap import (
    LEVEL,
    cluster_draws,
    draw_counts,
    percentile_interval,
    resample_counts,
)
from evalsite.core.stats.multiple import ONE_SIDED_ALPHA, holm
from evalsite.core.stats.pairs import CATEGORIES
from evalsite.core.stats.record import Record
from evalsite.core.stats.student import t_below, t_quantile

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
    cases: Sequence[str] | None = None,
) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of kappa with ``numpy.random.default_rng(seed)``,
    resampling ``cases`` (a case's labels are drawn together) or, without them, rated items.
    Resamples where kappa is undefined are dropped; None under 2 items (or cases) or when
    kappa is undefined in every resample."""
    k = len(categories)
    if cases is None:
        table = np.asarray(confusion_matrix(rater_a, rater_b, categories=categories), np.int64)
        if table.sum() < 2:
            return None
        rng = np.random.default_rng(seed)
        cells = resample_counts(table.ravel(), resamples=resamples, rng=rng)
        return percentile_interval(_kappas(cells.reshape(resamples, k, k)))
    tables = _case_tables(rater_a, rater_b, cases, categories)
    m = len(tables)
    if m < 2:
        return None
    kappas = [
        _kappas((draw_counts(drawn, m) @ tables).reshape(-1, k, k))
        for drawn in cluster_draws(m, resamples=resamples, seed=seed)
    ]
    return percentile_interval(np.concatenate(kappas))


def _case_tables(
    rater_a: Sequence[str], rater_b: Sequence[str], cases: Sequence[str], categories: Sequence[str]
) -> np.ndarray:
    """A (cases, k·k) array: each case's confusion counts, flattened."""
    grouped: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for a, b, case in zip(rater_a, rater_b, cases, strict=True):
        grouped[case][0].append(a)
        grouped[case][1].append(b)
    return np.array(
        [np.ravel(confusion_matrix(a, b, categories=categories)) for a, b in grouped.values()],
        dtype=np.int64,
    ).reshape(len(grouped), len(categories) ** 2)


@dataclass(frozen=True)
class CaseInterval(Record):
    """Kappa's 95% interval with the case as the unit: labels of one case's repeats share
    its prompt, so they are one cluster, never independent draws."""

    n: int  # labels
    cases: int
    se: float | None  # cluster-robust (delta method, influence summed per case)
    ci: tuple[float, float] | None  # kappa ± z·se, clipped to [-1, 1]
    why_none: str | None  # why there is no interval, when there is none


def case_interval(
    rater_a: Sequence[str],
    rater_b: Sequence[str],
    cases: Sequence[str],
    *,
    categories: Sequence[str] = CATEGORIES,
) -> CaseInterval:
    """Kappa ± t·se over the labels' ``cases``. se is the delta-method (Fleiss–Cohen–Everitt)
    standard error with each label's influence summed within its case before squaring, times
    √(C/(C−1)) for C cases; t is Student's 97.5% quantile on C − 1 degrees of freedom. With one
    label a case se is the FCE standard error times √(C/(C−1)); repeats that copy a verdict
    add no confidence. None, saying why, under two cases, where kappa is undefined, or where
    every case agrees alike (se 0: no spread to measure, never a zero-width interval)."""
    n, count = len(rater_a), len(set(cases))
    influence = _influence(rater_a, rater_b, categories)
    if influence is None:
        return CaseInterval(n, count, None, None, "kappa is undefined")
    if count < 2:
        return CaseInterval(n, count, None, None, "fewer than 2 cases")
    kappa, values = influence
    per_case: dict[str, float] = defaultdict(float)
    for case, value in zip(cases, values, strict=True):
        per_case[case] += value
    se = math.sqrt(sum(v * v for v in per_case.values()) * count / (count - 1)) / n
    if se < 1e-12 and values.size and np.all(np.asarray(rater_a) == np.asarray(rater_b)):
        return CaseInterval(n, count, 0.0, (_all_agree_bound(rater_a, count), 1.0), None)
    if se < 1e-12:
        return CaseInterval(n, count, 0.0, None, "every case agrees alike: no spread to measure")
    half = t_quantile(LEVEL, count - 1) * se
    return CaseInterval(n, count, se, (max(-1.0, kappa - half), min(1.0, kappa + half)), None)


def _all_agree_bound(rater: Sequence[str], cases: int) -> float:
    """Kappa's lower bound when every label agrees: the delta method has no spread to see, so
    the disagreement rate is bounded instead, by the exact (Clopper–Pearson) 97.5% bound of
    0 of ``cases`` cases, 1 − 0.025^(1/C), and kappa = 1 − (1 − p_o)/(1 − p_e) at the
    current p_e."""
    shares = np.unique(np.asarray(rater), return_counts=True)[1] / len(rater)
    p_e = float(np.sum(shares**2))
    disagree = 1 - ((1 - LEVEL) / 2) ** (1 / cases)
    return cast(float, max(-1.0, 1 - disagree / (1 - p_e)))


def _influence(
    rater_a: Sequence[str], rater_b: Sequence[str], categories: Sequence[str]
) -> tuple[float, np.ndarray] | None:
    """Kappa and each label's influence on it, (dκ/dp_o·(agreeᵢ − p_o) + dκ/dp_e·(p_e,ᵢ −
    p_e)), whose squares sum to n²·var of the FCE variance. None where kappa is undefined."""
    table = np.asarray(confusion_matrix(rater_a, rater_b, categories=categories), np.float64)
    n = table.sum()
    if n == 0:
        return None
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    p_o, p_e = float(np.trace(p)), float(rows @ cols)
    if p_e >= 1:
        return None
    kappa = (p_o - p_e) / (1 - p_e)
    index = {category: i for i, category in enumerate(categories)}
    a = np.array([index[x] for x in rater_a])
    b = np.array([index[x] for x in rater_b])
    agree = (a == b).astype(np.float64)
    chance = cols[a] + rows[b] - 2 * p_e
    return kappa, ((agree - p_o) - (1 - kappa) * chance) / (1 - p_e)


def _chance(tables: np.ndarray) -> np.ndarray:
    """n² · p_e of each (…, k, k) count table, as exact integers."""
    return cast(np.ndarray, (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1))


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
    cases: int = 0  # the labels' cases: a case's repeats are one
    ci: tuple[float, float] | None = None  # over cases (case_interval); None: see no_interval
    no_interval: str | None = None
    p_value: float | None = None  # one-sided, of "at or above the floor"; None: not tested
    p_holm: float | None = None  # Holm-adjusted over every task tested
    below_floor: bool | None = None  # p_holm below ONE_SIDED_ALPHA; None: not tested


def per_task_kappa(
    rows: Iterable[tuple[str, ...]], *, min_n: int = MIN_N_PER_TASK, floor: float | None = None
) -> list[TaskKappa]:
    """Kappa per task from (task, human, judge[, case]) rows, worst first.

    A task with fewer than ``min_n`` rows shows agreement only, flagged ``low_n``. Tasks with
    a kappa come first, lowest kappa first; then the rest, lowest agreement first. Each kappa
    has its interval over cases (:func:`case_interval`; each row its own case without one).
    With a ``floor`` every task with a standard error is one test of "its kappa is at or
    above the floor" (one-sided, t on cases − 1 degrees of freedom), the tests are one
    family Holm-corrected (:func:`~evalsite.core.stats.multiple.holm`), and a task is
    ``below_floor`` only when its adjusted p is below
    :data:`~evalsite.core.stats.multiple.ONE_SIDED_ALPHA`: one task in forty would look
    below the floor by chance.
    """
    grouped: dict[str, tuple[list[str], list[str], list[str]]] = defaultdict(lambda: ([], [], []))
    for task, human, judge, *case in rows:
        humans, judges, cases = grouped[task]
        humans.append(human)
        judges.append(judge)
        cases.append(case[0] if case else f"{task}\x00{len(cases)}")
    tasks = []
    for task, (humans, judges, cases) in grouped.items():
        result = cohen_kappa(humans, judges)
        low_n = result.n < min_n
        kappa = None if low_n else result.kappa
        interval = case_interval(humans, judges, cases)
        figure = TaskKappa(task, result.n, result.agreement, kappa, kappa_band(kappa), low_n,
                           interval.cases)  # fmt: skip
        if kappa is not None:
            figure = replace(figure, ci=interval.ci, no_interval=interval.why_none)
            if floor is not None and interval.se:
                statistic = (kappa - floor) / interval.se
                figure = replace(figure, p_value=t_below(statistic, interval.cases - 1))
        tasks.append(figure)
    adjusted = holm([task.p_value for task in tasks])
    tasks = [
        task if p is None else replace(task, p_holm=p, below_floor=p < ONE_SIDED_ALPHA)
        for task, p in zip(tasks, adjusted, strict=True)
    ]
    return sorted(tasks, key=_worst_first)


def _worst_first(task: TaskKappa) -> tuple[bool, float, float, str]:
    return (task.kappa is None, task.kappa or 0.0, task.agreement or 0.0, task.task)
