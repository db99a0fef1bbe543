"""A label-corrected win-rate: prediction-powered inference, stratified by task (§9).

Angelopoulos et al. (2023), "Prediction-powered inference": the judge scores every pair,
humans label a random sample of them; the estimate is the judge's mean over the pairs
without a label plus the mean human-minus-judge difference (the *rectifier*) over the
labelled ones. It is unbiased whatever the judge's bias, and its interval widens with the
spread of that difference, so a judge that disagrees with the humans costs width, never
validity. This is classical PPI (power-tuning λ = 1), as the paper defines it.

The labelling queue samples pairs task by task in turn (``labels/queue.py``), so small
tasks are over-represented among the labels. The estimator is therefore **stratified by
task**: PPI within each task, then the tasks' estimates weighted by their share of the
judged pairs (the raw win-rate's own weighting), Var = Σ w_t² Var_t. Spreads use ddof 0,
as ``ppi_py`` does.

A case's repeats share its prompt, so the variance is cluster-robust by case: each case's
deviations from both means (the unlabelled pairs' and the rectifier's) are summed before
squaring. That is ppi_py's ddof-0 variance when no two values share a case, and it is
unchanged when every verdict is copied into more repeats. The interval reads Student's t
(z's 1.96 made 30 cases cover 92.6%) with Welch–Satterthwaite's degrees of freedom over the
tasks, each task's variance counting its labelled cases − 1, and at most min(labels,
cases) − 1: a task's bias rests on its own few labels, so 3 tasks × 4 labels have about 9
degrees of freedom, not 11 (with 11 the interval covered 91.1%). Below
:data:`~evalsite.core.stats.bootstrap.FEW_CLUSTERS` labels or cases it says "few labels".
It is clipped to [0, 1].

**Actively sampled labels** (issue 33; Zrnic & Candès, "Active statistical inference",
ICML 2024). The queue may ask for a label on a pair with a probability π that is higher
where the judge is unsure (:mod:`~evalsite.core.stats.active`). Each label then stands for
1/π pairs: per task the estimate is the judge's mean over *all* its judged pairs plus the
inverse-probability weighted (Hájek) mean of human-minus-judge over the labelled ones,
Σ w(y − f) / Σ w with w = 1/π (a label with no recorded π counts as π = 1). The ratio form
needs no count of the pairs the queue looked at, only that they were a random part of the
task: the queue scans the task's pairs in a seeded random order. Its variance is the
sandwich of the same estimator: each pair's influence is (f − f̄)/N, plus w(d − r̂)/Σw for a
labelled one, summed per case before squaring (the covariance of the two terms, which share
their pairs, included). Without any recorded π the classical estimator above is used.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from evalsite.core.stats.bootstrap import FEW_CLUSTERS, LEVEL, cluster_index, cluster_totals
from evalsite.core.stats.record import Record
from evalsite.core.stats.student import t_quantile

MIN_LABELLED = 10  # labelled judgements per candidate before a corrected figure is shown
MIN_LABELLED_PER_TASK = 2  # a task's rectifier needs a spread: two labels at least
ESTIMATOR = "prediction-powered, stratified by task (task weights: share of judged pairs)"
ESTIMATOR_WEIGHTED = (
    "prediction-powered, inverse-probability weighted (Hájek) for actively sampled labels, "
    "stratified by task (task weights: share of judged pairs)"
)


@dataclass(frozen=True)
class Stratum:
    """One task of one candidate: the human and judge score of each labelled judgement,
    and the judge score of each judged pair no label covers; ``pairs`` counts every judged
    pair of the task (labelled ones included), the task's weight; ``cases`` names each
    unlabelled pair's case and ``label_cases`` each labelled judgement's (each its own
    without them); ``probabilities`` the probability with which the queue asked for each
    labelled judgement (None: not recorded, counted as 1)."""

    human: Sequence[float]
    judge: Sequence[float]
    unlabelled: Sequence[float]
    pairs: int
    cases: Sequence[Hashable] | None = None
    label_cases: Sequence[Hashable] | None = None
    probabilities: Sequence[float | None] | None = None


@dataclass(frozen=True)
class Corrected(Record):
    win_rate: float | None  # None when suppressed
    ci: tuple[float, float] | None  # estimate ± t(Welch–Satterthwaite df)·se, in [0, 1]
    se: float | None
    n_labelled: int  # labelled judgements with a human consensus
    n_judged: int  # judged pairs
    rectifier: float | None  # weighted mean human-minus-judge: the judge's bias, signed
    estimator: str
    suppressed: str | None  # why there is no figure, else None
    method: str | None = None  # "normal", or "t" below FEW_CLUSTERS labels or cases
    clipped: bool = False  # the interval reached past 0 or 1 and was cut there
    no_interval: str | None = None  # why a figure has no interval (no spread at all)
    # se² in two parts: the judge mean's term (with its covariance with the rectifier),
    # which more labels do not shrink, and the rectifier's, which shrinks as 1/labels
    variance_judge: float | None = None
    variance_labels: float | None = None


class _Parts(NamedTuple):
    """One task's estimate, rectifier and se² in the two parts :class:`Corrected` keeps."""

    estimate: float
    rectifier: float
    variance_judge: float
    variance_labels: float


def ppi_mean(
    human: Sequence[float],
    judge: Sequence[float],
    unlabelled: Sequence[float],
    *,
    clusters: Sequence[Hashable] | None = None,
    label_clusters: Sequence[Hashable] | None = None,
) -> tuple[float, float]:
    """Classical PPI for a mean: (estimate, standard error). The variance is cluster-robust
    by case: ``clusters`` names each unlabelled pair's case and ``label_clusters`` each
    labelled judgement's (each its own without them). Var = Σ_c I_c², I_c a case's share
    of both terms' deviations — ppi_py's ddof-0 variance when no two values share a case.
    With no unlabelled pair the labels alone: mean(human) and its standard error."""
    parts = _classical(human, judge, unlabelled, clusters, label_clusters)
    return parts.estimate, math.sqrt(parts.variance_judge + parts.variance_labels)


def ppi_weighted_mean(
    human: Sequence[float],
    judge: Sequence[float],
    unlabelled: Sequence[float],
    probabilities: Sequence[float | None],
    *,
    clusters: Sequence[Hashable] | None = None,
    label_clusters: Sequence[Hashable] | None = None,
) -> tuple[float, float]:
    """PPI for a mean with labels asked for with ``probabilities`` (None counts as 1):
    (estimate, standard error). The estimate is the judge's mean over every pair, labelled
    and unlabelled, plus Σ w·(human − judge) / Σ w over the labelled, w = 1/π (Hájek); the
    variance is cluster-robust by case as in :func:`ppi_mean`."""
    parts = _weighted(human, judge, unlabelled, probabilities, clusters, label_clusters)
    return parts.estimate, math.sqrt(parts.variance_judge + parts.variance_labels)


def _classical(
    human: Sequence[float],
    judge: Sequence[float],
    unlabelled: Sequence[float],
    clusters: Sequence[Hashable] | None,
    label_clusters: Sequence[Hashable] | None,
) -> _Parts:
    y, f, rest = (np.asarray(values, dtype=float) for values in (human, judge, unlabelled))
    difference = y - f
    if rest.size == 0:
        return _Parts(float(y.mean()), float(difference.mean()), 0.0, float(y.var() / y.size))
    judge_part = np.concatenate([(rest - rest.mean()) / rest.size, np.zeros(y.size)])
    label_part = np.concatenate(
        [np.zeros(rest.size), (difference - difference.mean()) / difference.size]
    )
    labels = _pair_clusters(rest.size, y.size, clusters, label_clusters)
    estimate = rest.mean() + difference.mean()
    return _Parts(
        float(estimate), float(difference.mean()), *_split(judge_part, label_part, labels)
    )


def _weighted(
    human: Sequence[float],
    judge: Sequence[float],
    unlabelled: Sequence[float],
    probabilities: Sequence[float | None],
    clusters: Sequence[Hashable] | None,
    label_clusters: Sequence[Hashable] | None,
) -> _Parts:
    y, f, rest = (np.asarray(values, dtype=float) for values in (human, judge, unlabelled))
    if len(probabilities) != y.size:
        raise ValueError(f"{len(probabilities)} probabilities for {y.size} labelled judgements")
    chance = np.array([1.0 if p is None else p for p in probabilities], dtype=float)
    if np.any((chance <= 0) | (chance > 1)):
        raise ValueError("a sampling probability must be in (0, 1]")
    weight = 1 / chance
    every = np.concatenate([rest, f])
    difference = y - f
    rectifier = float(np.sum(weight * difference) / weight.sum())
    judge_part = (every - every.mean()) / every.size
    label_part = np.concatenate(
        [np.zeros(rest.size), weight * (difference - rectifier) / weight.sum()]
    )
    labels = _pair_clusters(rest.size, y.size, clusters, label_clusters)
    estimate = float(every.mean()) + rectifier
    return _Parts(estimate, rectifier, *_split(judge_part, label_part, labels))


def _pair_clusters(
    rest: int,
    labelled: int,
    clusters: Sequence[Hashable] | None,
    label_clusters: Sequence[Hashable] | None,
) -> np.ndarray:
    """Each value's case, the unlabelled pairs first (each its own without names)."""
    rest_ids = list(clusters) if clusters is not None else [("u", i) for i in range(rest)]
    label_ids = (
        list(label_clusters) if label_clusters is not None else [("l", i) for i in range(labelled)]
    )
    return cluster_index(rest_ids + label_ids, rest + labelled)


def _split(
    judge_part: np.ndarray, label_part: np.ndarray, labels: np.ndarray
) -> tuple[float, float]:
    """Σ_c (a_c + b_c)², a case's judge-mean and rectifier influence summed per case, as
    (the part more labels do not shrink: Σ a² + 2 Σ a·b, the rectifier's part: Σ b²)."""
    judge_totals, _ = cluster_totals(judge_part, labels)
    label_totals, _ = cluster_totals(label_part, labels)
    total = float(np.sum((judge_totals + label_totals) ** 2))
    rectifier = float(np.sum(label_totals**2))
    return total - rectifier, rectifier


def corrected_win_rate(
    strata: Mapping[str, Stratum],
    *,
    min_labelled: int = MIN_LABELLED,
    min_per_task: int = MIN_LABELLED_PER_TASK,
) -> Corrected:
    """The stratified PPI win-rate over ``strata`` (one per task), or the reason it is
    suppressed: fewer than ``min_labelled`` labelled judgements in all, or a task with
    judged pairs and fewer than ``min_per_task`` of them (its bias would be unknown). When
    any label has a recorded sampling probability, every task uses the weighted estimator
    (:func:`ppi_weighted_mean`) and ``estimator`` says so."""
    judged = sum(stratum.pairs for stratum in strata.values())
    labelled = sum(len(stratum.human) for stratum in strata.values())
    weighted = any(p is not None for s in strata.values() for p in s.probabilities or ())
    name = ESTIMATOR_WEIGHTED if weighted else ESTIMATOR
    reason = _suppressed(strata, labelled, min_labelled, min_per_task)
    if reason:
        return Corrected(None, None, None, labelled, judged, None, name, reason)
    estimate = rectifier = fixed = shrinking = 0.0
    shares: list[tuple[float, int]] = []  # each task's variance and its degrees of freedom
    for stratum in strata.values():
        weight = stratum.pairs / judged
        parts = _task(stratum, weighted)
        estimate += weight * parts.estimate
        rectifier += weight * parts.rectifier
        fixed += weight**2 * parts.variance_judge
        shrinking += weight**2 * parts.variance_labels
        shares.append((weight**2 * (parts.variance_judge + parts.variance_labels),
                       _label_cases(stratum) - 1))  # fmt: skip
    variance = sum(share for share, _ in shares)
    se = math.sqrt(variance)
    figure = Corrected(estimate, None, se, labelled, judged, rectifier, name, None,
                       variance_judge=fixed, variance_labels=shrinking)  # fmt: skip
    if se == 0:
        return replace(figure, no_interval=_no_spread(strata))
    units = min(labelled, _cases(strata))
    method = "t" if units < FEW_CLUSTERS else "normal"
    half = t_quantile(LEVEL, _degrees_of_freedom(variance, shares, units - 1)) * se
    low, high = estimate - half, estimate + half
    clipped = low < 0 or high > 1
    return replace(figure, ci=(max(low, 0.0), min(high, 1.0)), method=method, clipped=clipped)


def _task(stratum: Stratum, weighted: bool) -> _Parts:
    if weighted:
        probabilities = stratum.probabilities or [None] * len(stratum.human)
        return _weighted(stratum.human, stratum.judge, stratum.unlabelled, probabilities,
                         stratum.cases, stratum.label_cases)  # fmt: skip
    return _classical(stratum.human, stratum.judge, stratum.unlabelled, stratum.cases,
                      stratum.label_cases)  # fmt: skip


def _degrees_of_freedom(variance: float, shares: Sequence[tuple[float, int]], most: int) -> int:
    """Welch–Satterthwaite's degrees of freedom of a sum of the tasks' variances, each with
    its own (its labelled cases − 1), rounded down; at least 1 and at most ``most``."""
    spread = math.fsum(share**2 / max(df, 1) for share, df in shares)
    pooled = int(variance**2 / spread) if spread > 0 else most
    return max(1, min(most, pooled))


def _label_cases(stratum: Stratum) -> int:
    """The cases a task's labelled judgements come from (each its own without them)."""
    labels = stratum.label_cases
    return len(set(labels)) if labels is not None else len(stratum.human)


def _cases(strata: Mapping[str, Stratum]) -> int:
    """The cases (clusters) the strata's values come from; a value without one is its own."""
    count = 0
    for stratum in strata.values():
        rest = stratum.cases if stratum.cases is not None else range(len(stratum.unlabelled))
        labels = stratum.label_cases
        if labels is None:
            labels = [("label", i) for i in range(len(stratum.human))]
        count += len(set(rest) | set(labels))
    return count


def _no_spread(strata: Mapping[str, Stratum]) -> str:
    scores = {
        float(score)
        for stratum in strata.values()
        for values in (stratum.human, stratum.judge, stratum.unlabelled)
        for score in values
    }
    if len(scores) == 1:
        return f"no spread: every labelled judgement and every judged pair scored {scores.pop():g}"
    return "no spread: the labels agree with the judge and each task's pairs scored alike"


def _suppressed(
    strata: Mapping[str, Stratum], labelled: int, min_labelled: int, min_per_task: int
) -> str | None:
    if labelled == 0:
        return "no labelled pairs from the sample queue"
    if labelled < min_labelled:
        return f"{labelled} labelled pairs; the corrected win-rate needs {min_labelled}"
    short = sorted(
        task
        for task, stratum in strata.items()
        if stratum.pairs and len(stratum.human) < min_per_task
    )
    if short:
        names = ", ".join(short[:3]) + (f" and {len(short) - 3} more" if len(short) > 3 else "")
        return (
            f"task {names} has fewer than {min_per_task} labelled pairs; every judged task "
            f"needs {min_per_task}"
        )
    return None
