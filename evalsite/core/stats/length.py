"""Length-aware judging: does the judge prefer the longer answer, and more than humans do?

A pair's length difference d is the candidate's answer length minus the baseline's (output
tokens). As in AlpacaEval's length-controlled win rate (Dubois et al., 2024) it enters as
x = tanh(d / s), s the standard deviation of d over the candidate's judged pairs: one
"typical" difference is x ≈ 0.76, and a few extreme answers cannot dominate the fit.

The fits are logistic regressions (binomial GLM, logit link) on fractional outcomes — pair
scores 0, ¼, ½, ¾, 1 — by iteratively reweighted least squares. Because a fractional score
is not a binomial count, and repeats of a case are not independent, the intervals use the
cluster-robust sandwich covariance with the case as the cluster (a case's repeats and both
judge orders are one cluster), statsmodels' small-sample factor G/(G−1)·(N−1)/(N−K), and a
t quantile with G − 1 degrees of freedom: statsmodels' GLM with ``cov_type="cluster"`` and
``use_t=True``. The minimum sizes count cases.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from evalsite.core.stats.record import Record
from evalsite.core.stats.student import t_quantile

MIN_LENGTH_CASES = 20  # cases with judged pairs before the judge's own length fit is shown
MIN_LENGTH_LABELS = 10  # labelled cases before the judge-against-humans fit is shown
LEVEL = 0.95
BIAS_MARGIN = 0.5  # log-odds per typical difference; see docs/judging.md
_MAX_ITERATIONS = 100
_TOLERANCE = 1e-12
_DIVERGED = 30.0  # |coefficient| beyond which the outcome is separated by length


@dataclass(frozen=True)
class Fit:
    params: np.ndarray
    cov: np.ndarray  # cluster-robust sandwich covariance of params
    clusters: int  # G: the interval's t has G − 1 degrees of freedom

    def interval(self, index: int) -> tuple[float, float]:
        """The ``LEVEL`` interval of one coefficient: value ± t(G − 1)·se."""
        half = t_quantile(LEVEL, self.clusters - 1) * math.sqrt(self.cov[index, index])
        value = float(self.params[index])
        return (value - half, value + half)


def logistic_fit(
    design: np.ndarray, outcome: np.ndarray, groups: Sequence[Hashable] | None = None
) -> Fit | None:
    """Binomial-logit GLM of ``outcome`` (each in [0, 1]) on the columns of ``design``, by
    IRLS, with the cluster-robust covariance by ``groups`` (each row's cluster; each row its
    own without them) times G/(G−1)·(N−1)/(N−K). None when it does not converge, a
    coefficient runs off (the outcome is separated) or there are fewer than 2 clusters."""
    x, y = np.asarray(design, dtype=float), np.asarray(outcome, dtype=float)
    rows, k = x.shape
    labels = np.arange(rows) if groups is None else _cluster_labels(groups)
    clusters = int(labels.max()) + 1 if rows else 0
    if clusters < 2 or rows <= k:
        return None
    beta = np.zeros(x.shape[1])
    for _ in range(_MAX_ITERATIONS):
        mu = 1 / (1 + np.exp(-(x @ beta)))
        weight = mu * (1 - mu)
        step = np.linalg.solve(x.T @ (weight[:, None] * x), x.T @ (y - mu))
        beta = beta + step
        if not np.all(np.isfinite(beta)) or np.max(np.abs(beta)) > _DIVERGED:
            return None
        if np.max(np.abs(step)) < _TOLERANCE:
            break
    else:
        return None
    mu = 1 / (1 + np.exp(-(x @ beta)))
    bread = np.linalg.inv(x.T @ ((mu * (1 - mu))[:, None] * x))
    scores = np.zeros((clusters, k))
    np.add.at(scores, labels, x * (y - mu)[:, None])
    factor = clusters / (clusters - 1) * (rows - 1) / (rows - k)
    return Fit(beta, factor * bread @ (scores.T @ scores) @ bread, clusters)


def _cluster_labels(groups: Sequence[Hashable]) -> np.ndarray:
    index: dict[Hashable, int] = {}
    return np.array([index.setdefault(group, len(index)) for group in groups], dtype=int)


def length_covariate(differences: Sequence[float], scale: float) -> np.ndarray:
    """x = tanh(d / scale), the length covariate of every fit here."""
    return np.tanh(np.asarray(differences, dtype=float) / scale)


def length_scale(differences: Sequence[float]) -> float | None:
    """s: the standard deviation (ddof 1) of the length differences; None when they do not
    vary (no fit can then tell length from anything else)."""
    if len(differences) < 2:
        return None
    scale = float(np.std(np.asarray(differences, dtype=float), ddof=1))
    return scale if scale > 0 else None


@dataclass(frozen=True)
class LengthPreference(Record):
    n: int  # judged pairs
    cases: int  # clusters: the unit of the intervals
    scale: float | None  # s, in tokens
    slope: float | None  # log-odds of the judge's preference per unit of x
    slope_ci: tuple[float, float] | None
    controlled: float | None  # the length-controlled win-rate: the fit at d = 0
    controlled_ci: tuple[float, float] | None
    suppressed: str | None


def length_preference(
    scores: Sequence[float],
    differences: Sequence[float],
    cases: Sequence[Hashable] | None = None,
) -> LengthPreference:
    """The judge's pair scores against the length difference: logit E[score] = a + b·x.
    ``slope`` is b; the length-controlled win-rate is σ(a), the expected score at equal
    lengths, its interval σ(a ± t·se(a)). ``cases`` names each pair's case (its cluster);
    without it each pair is its own."""
    n = len(scores)
    count = n if cases is None else len(set(cases))
    scale = length_scale(differences)
    reason = None
    if count < MIN_LENGTH_CASES:
        reason = f"{count} cases ({n} judged pairs); the length fit needs {MIN_LENGTH_CASES} cases"
    elif scale is None:
        reason = "the answers' lengths do not differ between pairs"
    fit = None
    if reason is None and scale is not None:
        design = np.column_stack([np.ones(n), length_covariate(differences, scale)])
        fit = logistic_fit(design, np.asarray(scores, dtype=float), cases)
        reason = None if fit else "the fit does not converge: the scores separate by length"
    if fit is None:
        return LengthPreference(n, count, scale, None, None, None, None, reason)
    a, b = fit.params
    low, high = fit.interval(0)
    return LengthPreference(
        n, count, scale, float(b), fit.interval(1), _sigmoid(a),
        (_sigmoid(low), _sigmoid(high)), None,
    )  # fmt: skip


@dataclass(frozen=True)
class LengthBias(Record):
    n: int  # labelled judgements
    cases: int  # their cases: the clusters
    human_slope: float | None
    judge_slope: float | None  # on the same labelled pairs
    bias: float | None  # judge_slope − human_slope
    bias_ci: tuple[float, float] | None
    margin: float
    warning: bool  # bias above the margin and its interval above 0
    suppressed: str | None


def length_bias(
    human: Sequence[float],
    judge: Sequence[float],
    differences: Sequence[float],
    scale: float,
    cases: Sequence[Hashable] | None = None,
) -> LengthBias:
    """The judge's length slope against the humans' on the same labelled judgements: one
    fit over both, logit E[y] = a + b·x + c·J + e·J·x (J = 1 on the judge's rows), so
    e = judge slope − human slope, its interval clustered by case (``cases`` names each
    judgement's; each judgement its own without it)."""
    n = len(human)
    groups = list(range(n)) if cases is None else list(cases)
    count = len(set(groups))
    reason = None if count >= MIN_LENGTH_LABELS else (
        f"{count} labelled cases ({n} labelled pairs); the comparison with humans needs "
        f"{MIN_LENGTH_LABELS} cases"
    )  # fmt: skip
    fit = None
    if reason is None:
        x = length_covariate(differences, scale)
        rows = np.concatenate([np.zeros(n), np.ones(n)])
        both = np.concatenate([x, x])
        design = np.column_stack([np.ones(2 * n), both, rows, rows * both])
        outcome = np.concatenate([np.asarray(human, float), np.asarray(judge, float)])
        fit = logistic_fit(design, outcome, groups=groups + groups)
        reason = None if fit else "the fit does not converge: the preferences separate by length"
    if fit is None:
        return LengthBias(n, count, None, None, None, None, BIAS_MARGIN, False, reason)
    _, b, _, e = fit.params
    ci = fit.interval(3)
    warning = bool(e > BIAS_MARGIN and ci[0] > 0)
    return LengthBias(n, count, float(b), float(b + e), float(e), ci, BIAS_MARGIN, warning, None)


def _sigmoid(value: float) -> float:
    return float(1 / (1 + math.exp(-value)))
