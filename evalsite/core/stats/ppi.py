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

A case's repeats share its prompt, so the unlabelled term's variance is cluster-robust by
case: Σ_c (S_c − n_c·ȳ)² / N², which is ppi_py's ddof-0 variance at one pair a case and is
unchanged when every verdict is copied into more repeats. Below
:data:`~evalsite.core.stats.bootstrap.FEW_CLUSTERS` labelled judgements the interval uses
t with n − 1 degrees of freedom instead of z; it is clipped to [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from evalsite.core.stats.bootstrap import FEW_CLUSTERS, LEVEL, cluster_index, cluster_totals
from evalsite.core.stats.kappa import Z_95
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
    unlabelled pair's case (each pair its own without it)."""

    human: Sequence[float]
    judge: Sequence[float]
    unlabelled: Sequence[float]
    pairs: int
    cases: Sequence[Hashable] | None = None


@dataclass(frozen=True)
class Corrected(Record):
    win_rate: float | None  # None when suppressed
    ci: tuple[float, float] | None  # estimate ± z·se (t below FEW_CLUSTERS labels), in [0, 1]
    se: float | None
    n_labelled: int  # labelled judgements with a human consensus
    n_judged: int  # judged pairs
    rectifier: float | None  # weighted mean human-minus-judge: the judge's bias, signed
    estimator: str
    suppressed: str | None  # why there is no figure, else None
    method: str | None = None  # "normal", or "t" with few labels
    clipped: bool = False  # the interval reached past 0 or 1 and was cut there
    no_interval: str | None = None  # why a figure has no interval (no spread at all)


def ppi_mean(
    human: Sequence[float],
    judge: Sequence[float],
    unlabelled: Sequence[float],
    *,
    clusters: Sequence[Hashable] | None = None,
) -> tuple[float, float]:
    """Classical PPI for a mean: (estimate, standard error), the unlabelled term's variance
    cluster-robust by ``clusters`` (each unlabelled pair's case). With no unlabelled pair
    the labels alone: mean(human) and its standard error."""
    y, f, rest = (np.asarray(values, dtype=float) for values in (human, judge, unlabelled))
    difference = y - f
    if rest.size == 0:
        return float(y.mean()), float(y.std() / math.sqrt(y.size))
    estimate = rest.mean() + difference.mean()
    sums, sizes = cluster_totals(rest, cluster_index(clusters, rest.size))
    unlabelled_variance = np.sum((sums - sizes * rest.mean()) ** 2) / rest.size**2
    variance = unlabelled_variance + difference.var() / difference.size
    return float(estimate), float(math.sqrt(variance))


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
    for stratum in strata.values():
        weight = stratum.pairs / judged
        value, se = ppi_mean(
            stratum.human, stratum.judge, stratum.unlabelled, clusters=stratum.cases
        )
        estimate += weight * value
        variance += (weight * se) ** 2
        rectifier += (
            weight * (math.fsum(stratum.human) - math.fsum(stratum.judge)) / len(stratum.human)
        )
    se = math.sqrt(variance)
    figure = Corrected(estimate, None, se, labelled, judged, rectifier, ESTIMATOR, None)
    if se == 0:
        return replace(figure, no_interval=_no_spread(strata))
    method = "t" if labelled < FEW_CLUSTERS else "normal"
    half = (t_quantile(LEVEL, labelled - 1) if method == "t" else Z_95) * se
    low, high = estimate - half, estimate + half
    clipped = low < 0 or high > 1
    return replace(figure, ci=(max(low, 0.0), min(high, 1.0)), method=method, clipped=clipped)


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
