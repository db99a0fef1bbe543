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
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from evalsite.core.stats.bootstrap import FEW_CLUSTERS, LEVEL, cluster_index, cluster_totals
from evalsite.core.stats.record import Record
from evalsite.core.stats.student import t_quantile

MIN_LABELLED = 10  # labelled judgements per candidate before a corrected figure is shown
MIN_LABELLED_PER_TASK = 2  # a task's rectifier needs a spread: two labels at least
ESTIMATOR = "prediction-powered, stratified by task (task weights: share of judged pairs)"


@dataclass(frozen=True)
class Stratum:
    """One task of one candidate: the human and judge score of each labelled judgement,
    and the judge score of each judged pair no label covers; ``pairs`` counts every judged
    pair of the task (labelled ones included), the task's weight; ``cases`` names each
    unlabelled pair's case and ``label_cases`` each labelled judgement's (each its own
    without them)."""

    human: Sequence[float]
    judge: Sequence[float]
    unlabelled: Sequence[float]
    pairs: int
    cases: Sequence[Hashable] | None = None
    label_cases: Sequence[Hashable] | None = None


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
    y, f, rest = (np.asarray(values, dtype=float) for values in (human, judge, unlabelled))
    difference = y - f
    if rest.size == 0:
        return float(y.mean()), float(y.std() / math.sqrt(y.size))
    estimate = rest.mean() + difference.mean()
    rest_ids = list(clusters) if clusters is not None else [("u", i) for i in range(rest.size)]
    label_ids = (
        list(label_clusters) if label_clusters is not None else [("l", i) for i in range(y.size)]
    )
    labels = cluster_index(rest_ids + label_ids, rest.size + y.size)
    influence = np.concatenate(
        [(rest - rest.mean()) / rest.size, (difference - difference.mean()) / difference.size]
    )
    per_case, _ = cluster_totals(influence, labels)
    return float(estimate), float(math.sqrt(np.sum(per_case**2)))


def corrected_win_rate(
    strata: Mapping[str, Stratum],
    *,
    min_labelled: int = MIN_LABELLED,
    min_per_task: int = MIN_LABELLED_PER_TASK,
) -> Corrected:
    """The stratified PPI win-rate over ``strata`` (one per task), or the reason it is
    suppressed: fewer than ``min_labelled`` labelled judgements in all, or a task with
    judged pairs and fewer than ``min_per_task`` of them (its bias would be unknown)."""
    judged = sum(stratum.pairs for stratum in strata.values())
    labelled = sum(len(stratum.human) for stratum in strata.values())
    reason = _suppressed(strata, labelled, min_labelled, min_per_task)
    if reason:
        return Corrected(None, None, None, labelled, judged, None, ESTIMATOR, reason)
    estimate = variance = rectifier = 0.0
    shares: list[tuple[float, int]] = []  # each task's variance and its degrees of freedom
    for stratum in strata.values():
        weight = stratum.pairs / judged
        value, se = ppi_mean(
            stratum.human,
            stratum.judge,
            stratum.unlabelled,
            clusters=stratum.cases,
            label_clusters=stratum.label_cases,
        )
        estimate += weight * value
        variance += (weight * se) ** 2
        shares.append(((weight * se) ** 2, _label_cases(stratum) - 1))
        rectifier += (
            weight * (math.fsum(stratum.human) - math.fsum(stratum.judge)) / len(stratum.human)
        )
    se = math.sqrt(variance)
    figure = Corrected(estimate, None, se, labelled, judged, rectifier, ESTIMATOR, None)
    if se == 0:
        return replace(figure, no_interval=_no_spread(strata))
    units = min(labelled, _cases(strata))
    method = "t" if units < FEW_CLUSTERS else "normal"
    half = t_quantile(LEVEL, _degrees_of_freedom(variance, shares, units - 1)) * se
    low, high = estimate - half, estimate + half
    clipped = low < 0 or high > 1
    return replace(figure, ci=(max(low, 0.0), min(high, 1.0)), method=method, clipped=clipped)


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
