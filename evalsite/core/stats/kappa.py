"""Cohen's kappa between the human consensus and the judge (SPEC §9).

By convention rater A is the human consensus and rater B the judge, so the confusion matrix
has humans as rows and the judge as columns; kappa and its variance are symmetric in the two.

**Weights.** Every figure takes optional ``weights``, one per rated item: 1/π for a label
the sample queue asked for with probability π (issue 33). The queue over-asks where the judge
was unsure, so the labels over-represent its flips; weighted, each label stands for the 1/π
pairs it was drawn from and kappa estimates the *population's* agreement. Weighted kappa is
Cohen's kappa of the weighted confusion matrix (scikit-learn's ``sample_weight``); its
standard errors are the linearised (sandwich) ones of that ratio estimator, with each item's
influence times its weight; ``n`` stays the count of items (what the gate's ``min_labels``
counts), and :func:`effective_size`, Kish's (Σw)²/Σw², says what the labels are worth.
Equal weights are no weights: they cancel from every figure, so the unweighted path is
taken and every figure is exactly as without.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import cast, overload

import numpy as np

from evalsite.core.stats.bootstrap import (
    LEVEL,
    cluster_draws,
    draw_counts,
    percentile_interval,
    resample_counts,
)
from evalsite.core.stats.pairs import CATEGORIES
from evalsite.core.stats.record import Record
from evalsite.core.stats.student import t_quantile

Z_95 = NormalDist().inv_cdf(0.975)  # 1.959964…
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
    n: int  # items rated (labels), weighted or not
    kappa: float | None  # None when undefined (no pairs, or p_e = 1), never 0 for that
    p_o: float | None  # observed agreement
    p_e: float | None  # agreement expected by chance from the two raters' marginals
    agreement: float | None  # p_o, shown beside kappa
    se: float | None  # asymptotic standard error (Fleiss, Cohen & Everitt 1969)
    ci: tuple[float, float] | None  # kappa ± z·se, clipped to [-1, 1]
    band: str | None
    confusion: list[list[int]]  # rows rater A (human), columns rater B (judge): items counted


@overload
def confusion_matrix(
    rater_a: Sequence[str],
    rater_b: Sequence[str],
    *,
    categories: Sequence[str] = ...,
    weights: None = None,
) -> list[list[int]]: ...
@overload
def confusion_matrix(
    rater_a: Sequence[str],
    rater_b: Sequence[str],
    *,
    categories: Sequence[str] = ...,
    weights: Sequence[float],
) -> list[list[float]]: ...
def confusion_matrix(
    rater_a: Sequence[str],
    rater_b: Sequence[str],
    *,
    categories: Sequence[str] = CATEGORIES,
    weights: Sequence[float] | None = None,
) -> list[list[int]] | list[list[float]]:
    """Counts of (A's category, B's category), rows A, columns B, in ``categories`` order;
    with ``weights``, the sum of the items' weights in each cell. ValueError for sequences of
    different lengths or a category not in ``categories``."""
    if len(rater_a) != len(rater_b):
        raise ValueError(f"the raters rated {len(rater_a)} and {len(rater_b)} items")
    a, b = _codes(rater_a, categories), _codes(rater_b, categories)
    k = len(categories)
    w = None if weights is None else _checked(weights, len(a))
    table: list[list[int]] | list[list[float]]  # numpy's tolist: ints, or floats with weights
    table = np.bincount(a * k + b, weights=w, minlength=k * k).reshape(k, k).tolist()
    return table


def _codes(rater: Sequence[str], categories: Sequence[str]) -> np.ndarray:
    """Each rating's index in ``categories``; ValueError for one not in them."""
    index = {category: i for i, category in enumerate(categories)}
    for label in rater:
        if label not in index:
            raise ValueError(f"unknown category {label!r}; expected one of {tuple(index)}")
    return np.array([index[label] for label in rater], dtype=np.intp)


def _checked(weights: Sequence[float], n: int) -> np.ndarray:
    """``weights`` as an array; ValueError unless there are n of them, positive and finite."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"{w.size} weights for {n} items")
    if not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError("weights are positive and finite")
    return w


def _weights(weights: Sequence[float] | None, n: int) -> np.ndarray | None:
    """Checked ``weights``, or None where they change nothing: none, or all equal."""
    if weights is None:
        return None
    w = _checked(weights, n)
    return None if n == 0 or np.all(w == w[0]) else w


def effective_size(weights: Sequence[float]) -> float:
    """Kish's effective sample size (Σw)²/Σw²: as many unweighted items as ``weights``'
    items are worth; their count when the weights are equal. ValueError without weights."""
    w = _checked(weights, len(weights))
    if w.size == 0:
        raise ValueError("no weights")
    return float(w.sum() ** 2 / np.sum(w**2))


def cohen_kappa(
    rater_a: Sequence[str],
    rater_b: Sequence[str],
    *,
    categories: Sequence[str] = CATEGORIES,
    weights: Sequence[float] | None = None,
) -> Kappa:
    """Cohen's kappa, (p_o − p_e) / (1 − p_e), with its asymptotic interval; with
    ``weights``, of the weighted confusion matrix, se the sandwich √(Σ(wᵢψᵢ)²)/Σw over each
    item's influence ψᵢ (:func:`_fit`), which is the FCE se when the weights are equal."""
    confusion = confusion_matrix(rater_a, rater_b, categories=categories)
    w = _weights(weights, len(rater_a))
    if w is not None:
        return _weighted_kappa(rater_a, rater_b, categories, w, confusion)
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


def _weighted_kappa(
    rater_a: Sequence[str],
    rater_b: Sequence[str],
    categories: Sequence[str],
    w: np.ndarray,
    confusion: list[list[int]],
) -> Kappa:
    n = len(rater_a)
    fit = cast(_Fit, _fit(rater_a, rater_b, categories, w))  # n ≥ 1: weights were unequal
    if fit.kappa is None:
        return Kappa(n, None, fit.p_o, fit.p_e, fit.p_o, None, None, None, confusion)
    value = fit.kappa
    se = float(np.sqrt(np.sum((w * fit.influence) ** 2)) / w.sum())
    ci = (max(-1.0, value - Z_95 * se), min(1.0, value + Z_95 * se))
    return Kappa(n, value, fit.p_o, fit.p_e, fit.p_o, se, ci, kappa_band(value), confusion)


def bootstrap_kappa_ci(
    rater_a: Sequence[str],
    rater_b: Sequence[str],
    *,
    seed: int,
    resamples: int = 2000,
    categories: Sequence[str] = CATEGORIES,
    cases: Sequence[str] | None = None,
    weights: Sequence[float] | None = None,
) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of kappa with ``numpy.random.default_rng(seed)``,
    resampling ``cases`` (a case's labels are drawn together) or, without them, rated items.
    With ``weights`` each resample's kappa is of its weighted table (items resampled one by
    one without cases). Resamples where kappa is undefined are dropped; None under 2 items (or
    cases) or when kappa is undefined in every resample."""
    k = len(categories)
    w = _weights(weights, len(rater_a))
    if cases is None and w is None:
        table = np.asarray(confusion_matrix(rater_a, rater_b, categories=categories), np.int64)
        if table.sum() < 2:
            return None
        rng = np.random.default_rng(seed)
        cells = resample_counts(table.ravel(), resamples=resamples, rng=rng)
        return percentile_interval(_kappas(cells.reshape(resamples, k, k)))
    if cases is None:
        cases = [str(i) for i in range(len(rater_a))]
    tables = _case_tables(rater_a, rater_b, cases, categories, w)
    m = len(tables)
    if m < 2:
        return None
    kappas = [
        _kappas((draw_counts(drawn, m) @ tables).reshape(-1, k, k))
        for drawn in cluster_draws(m, resamples=resamples, seed=seed)
    ]
    return percentile_interval(np.concatenate(kappas))


def _case_tables(
    rater_a: Sequence[str],
    rater_b: Sequence[str],
    cases: Sequence[str],
    categories: Sequence[str],
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """A (cases, k·k) array: each case's confusion counts (with ``weights``, summed weights),
    flattened."""
    if len(cases) != len(rater_a) or len(rater_a) != len(rater_b):
        raise ValueError(f"{len(cases)} cases for {len(rater_a)} and {len(rater_b)} ratings")
    grouped: dict[str, list[int]] = defaultdict(list)
    for i, case in enumerate(cases):
        grouped[case].append(i)
    k = len(categories)
    cells = _codes(rater_a, categories) * k + _codes(rater_b, categories)
    rows = [
        np.bincount(cells[at], weights=None if weights is None else weights[at], minlength=k * k)
        for at in grouped.values()
    ]
    return np.array(rows, dtype=np.int64 if weights is None else np.float64).reshape(
        len(grouped), k * k
    )


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
    weights: Sequence[float] | None = None,
) -> CaseInterval:
    """Kappa ± t·se over the labels' ``cases``. se is the delta-method (Fleiss–Cohen–Everitt)
    standard error with each label's influence summed within its case before squaring, times
    √(C/(C−1)) for C cases; t is Student's 97.5% quantile on C − 1 degrees of freedom. With one
    label a case se is the FCE standard error times √(C/(C−1)); repeats that copy a verdict
    add no confidence. With ``weights`` kappa is the weighted one, each label's influence is
    times its weight and the sum over cases is over Σw, not n (the sandwich of the weighted
    estimator). None, saying why, under two cases, where kappa is undefined, or where every
    case agrees alike (se 0: no spread to measure, never a zero-width interval)."""
    n, count = len(rater_a), len(set(cases))
    w = _weights(weights, n)
    fit = _fit(rater_a, rater_b, categories, w)
    if fit is None or fit.kappa is None:
        return CaseInterval(n, count, None, None, "kappa is undefined")
    if count < 2:
        return CaseInterval(n, count, None, None, "fewer than 2 cases")
    kappa, values = fit.kappa, fit.influence if w is None else w * fit.influence
    per_case: dict[str, float] = defaultdict(float)
    for case, value in zip(cases, values, strict=True):
        per_case[case] += value
    total = n if w is None else float(w.sum())
    se = math.sqrt(sum(v * v for v in per_case.values()) * count / (count - 1)) / total
    if se < 1e-12 and values.size and np.all(np.asarray(rater_a) == np.asarray(rater_b)):
        return CaseInterval(n, count, 0.0, (_all_agree_bound(rater_a, count, w), 1.0), None)
    if se < 1e-12:
        return CaseInterval(n, count, 0.0, None, "every case agrees alike: no spread to measure")
    half = t_quantile(LEVEL, count - 1) * se
    return CaseInterval(n, count, se, (max(-1.0, kappa - half), min(1.0, kappa + half)), None)


def _all_agree_bound(rater: Sequence[str], cases: int, weights: np.ndarray | None) -> float:
    """Kappa's lower bound when every label agrees: the delta method has no spread to see, so
    the disagreement rate is bounded instead, by the exact (Clopper–Pearson) 97.5% bound of
    0 of ``cases`` cases, 1 − 0.025^(1/C), and kappa = 1 − (1 − p_o)/(1 − p_e) at the
    current (weighted) p_e."""
    if weights is None:
        shares = np.unique(np.asarray(rater), return_counts=True)[1] / len(rater)
    else:
        codes = np.unique(np.asarray(rater), return_inverse=True)[1]
        shares = np.bincount(codes, weights=weights) / weights.sum()
    p_e = float(np.sum(shares**2))
    disagree = 1 - ((1 - LEVEL) / 2) ** (1 / cases)
    return cast(float, max(-1.0, 1 - disagree / (1 - p_e)))


@dataclass(frozen=True)
class _Fit:
    kappa: float | None  # None where p_e = 1
    p_o: float
    p_e: float
    influence: np.ndarray  # each item's ψᵢ; empty where kappa is undefined


def _fit(
    rater_a: Sequence[str],
    rater_b: Sequence[str],
    categories: Sequence[str],
    weights: np.ndarray | None,
) -> _Fit | None:
    """Kappa over the table of (weighted) shares and each item's influence on it, ψᵢ =
    dκ/dp_o·(agreeᵢ − p_o) + dκ/dp_e·(p_e,ᵢ − p_e): the estimate less the population's is
    about Σwᵢψᵢ/Σwᵢ, so unweighted the squares of ψᵢ sum to n²·var of the FCE variance.
    None with no items."""
    counts = np.asarray(confusion_matrix(rater_a, rater_b, categories=categories), np.float64)
    if counts.sum() == 0:
        return None
    a, b = _codes(rater_a, categories), _codes(rater_b, categories)
    if weights is None:
        table = counts
    else:
        k = len(categories)
        table = np.bincount(a * k + b, weights=weights, minlength=k * k).reshape(k, k)
    p = table / table.sum()
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    p_o, p_e = float(np.trace(p)), float(rows @ cols)
    if p_e >= 1:
        return _Fit(None, p_o, p_e, np.empty(0))
    kappa = (p_o - p_e) / (1 - p_e)
    agree = (a == b).astype(np.float64)
    chance = cols[a] + rows[b] - 2 * p_e
    return _Fit(kappa, p_o, p_e, ((agree - p_o) - (1 - kappa) * chance) / (1 - p_e))


def _chance(tables: np.ndarray) -> np.ndarray:
    """n² · p_e of each (…, k, k) table: exact integers for count tables."""
    return cast(np.ndarray, (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1))


def _kappas(tables: np.ndarray) -> np.ndarray:
    """Kappa of each (…, k, k) count (or weight) table; NaN where p_e = 1 or n = 0.

    Kappa is (n·agree − n²p_e) / (n² − n²p_e): for counts both integers, so the undefined
    case is found exactly and a kappa that is 0 (a constant rater) comes out exactly 0; for
    weights p_e = 1 only with one cell filled, where n² − n²p_e is exactly 0 too.
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
