"""Length-aware judging: does the judge prefer the longer answer, and more than humans do?

A pair's length difference d is the candidate's answer length minus the baseline's (output
tokens). As in AlpacaEval's length-controlled win rate (Dubois et al., 2024) it enters as
x = tanh(d / s), s the standard deviation of d over the candidate's judged pairs: one
"typical" difference is x ≈ 0.76, and a few extreme answers cannot dominate the fit.

The fits are logistic regressions (binomial GLM, logit link) on fractional outcomes — pair
scores 0, ¼, ½, ¾, 1 — by iteratively reweighted least squares. Because a fractional score
is not a binomial count, and repeats of a case are not independent, the intervals use the
sandwich (robust) covariance: HC0 for the judge's own fit, clustered by labelled item for
the judge-against-humans fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalsite.core.stats.kappa import Z_95
from evalsite.core.stats.record import Record

MIN_LENGTH_PAIRS = 20  # judged pairs before the judge's own length fit is shown
MIN_LENGTH_LABELS = 10  # labelled judgements before the judge-against-humans fit is shown
BIAS_MARGIN = 0.5  # log-odds per typical difference; see docs/judging.md
_MAX_ITERATIONS = 100
_TOLERANCE = 1e-12
_DIVERGED = 30.0  # |coefficient| beyond which the outcome is separated by length


@dataclass(frozen=True)
class Fit:
    params: np.ndarray
    cov: np.ndarray  # sandwich covariance of params


def logistic_fit(
    design: np.ndarray, outcome: np.ndarray, groups: Sequence[int] | None = None
) -> Fit | None:
    """Binomial-logit GLM of ``outcome`` (each in [0, 1]) on the columns of ``design``, by
    IRLS, with the HC0 sandwich covariance, or the cluster-robust one (no small-sample
    factor) when ``groups`` names each row's cluster. None when it does not converge or a
    coefficient runs off (the outcome is separated)."""
    x, y = np.asarray(design, dtype=float), np.asarray(outcome, dtype=float)
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
    scores = x * (y - mu)[:, None]
    if groups is not None:
        labels = np.unique(np.asarray(groups), return_inverse=True)[1]
        summed = np.zeros((labels.max() + 1, x.shape[1]))
        np.add.at(summed, labels, scores)
        scores = summed
    return Fit(beta, bread @ (scores.T @ scores) @ bread)


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
    n: int
    scale: float | None  # s, in tokens
    slope: float | None  # log-odds of the judge's preference per unit of x
    slope_ci: tuple[float, float] | None
    controlled: float | None  # the length-controlled win-rate: the fit at d = 0
    controlled_ci: tuple[float, float] | None
    suppressed: str | None


def length_preference(scores: Sequence[float], differences: Sequence[float]) -> LengthPreference:
    """The judge's pair scores against the length difference: logit E[score] = a + b·x.
    ``slope`` is b; the length-controlled win-rate is σ(a), the expected score at equal
    lengths, its interval σ(a ± z·se(a))."""
    n = len(scores)
    scale = length_scale(differences)
    reason = None
    if n < MIN_LENGTH_PAIRS:
        reason = f"{n} judged pairs; the length fit needs {MIN_LENGTH_PAIRS}"
    elif scale is None:
        reason = "the answers' lengths do not differ between pairs"
    fit = None
    if reason is None:
        design = np.column_stack([np.ones(n), length_covariate(differences, scale)])
        fit = logistic_fit(design, np.asarray(scores, dtype=float))
        reason = None if fit else "the fit does not converge: the scores separate by length"
    if fit is None:
        return LengthPreference(n, scale, None, None, None, None, reason)
    a, b = fit.params
    se_a, se_b = np.sqrt(np.diag(fit.cov))
    return LengthPreference(
        n, scale, float(b), _interval(b, se_b), _sigmoid(a),
        (_sigmoid(a - Z_95 * se_a), _sigmoid(a + Z_95 * se_a)), None,
    )  # fmt: skip


@dataclass(frozen=True)
class LengthBias(Record):
    n: int  # labelled judgements
    human_slope: float | None
    judge_slope: float | None  # on the same labelled pairs
    bias: float | None  # judge_slope − human_slope
    bias_ci: tuple[float, float] | None
    margin: float
    warning: bool  # bias above the margin and its interval above 0
    suppressed: str | None


def length_bias(
    human: Sequence[float], judge: Sequence[float], differences: Sequence[float], scale: float
) -> LengthBias:
    """The judge's length slope against the humans' on the same labelled judgements: one
    fit over both, logit E[y] = a + b·x + c·J + e·J·x (J = 1 on the judge's rows), so
    e = judge slope − human slope, its interval clustered by judgement."""
    n = len(human)
    reason = None if n >= MIN_LENGTH_LABELS else (
        f"{n} labelled pairs; the comparison with humans needs {MIN_LENGTH_LABELS}"
    )  # fmt: skip
    fit = None
    if reason is None:
        x = length_covariate(differences, scale)
        rows = np.concatenate([np.zeros(n), np.ones(n)])
        both = np.concatenate([x, x])
        design = np.column_stack([np.ones(2 * n), both, rows, rows * both])
        outcome = np.concatenate([np.asarray(human, float), np.asarray(judge, float)])
        fit = logistic_fit(design, outcome, groups=np.concatenate([np.arange(n)] * 2))
        reason = None if fit else "the fit does not converge: the preferences separate by length"
    if fit is None:
        return LengthBias(n, None, None, None, None, BIAS_MARGIN, False, reason)
    _, b, _, e = fit.params
    ci = _interval(e, math.sqrt(fit.cov[3, 3]))
    warning = bool(e > BIAS_MARGIN and ci[0] > 0)
    return LengthBias(n, float(b), float(b + e), float(e), ci, BIAS_MARGIN, warning, None)


def _interval(value: float, se: float) -> tuple[float, float]:
    return (float(value - Z_95 * se), float(value + Z_95 * se))


def _sigmoid(value: float) -> float:
    return float(1 / (1 + math.exp(-value)))
