"""A pair's score from its two judge orders, and a candidate's win-rate (SPEC §8, §9).

Order 1 shows the baseline as "Answer 1", order 2 swaps; each verdict arrives already mapped
to the side it preferred. The candidate scores 1 for a preferred verdict, ½ for a tie and 0
for the baseline, averaged over the two orders. Opposite preferences cancel to ½ and are a
**flip**: the judge followed the position, not the answer.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from evalsite.core.stats.bootstrap import cluster_index, cluster_mean_interval
from evalsite.core.stats.record import Record

CATEGORIES = ("baseline", "candidate", "tie")
PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)
MIN_N_FOR_INTERVAL = 8  # cases, not pairs: copying a verdict buys no confidence
FLIP_WARNING_RATE = 0.30

_VERDICT_SCORE = {"baseline": 0.0, "candidate": 1.0, "tie": 0.5}


@dataclass(frozen=True)
class PairScore(Record):
    score: float
    flip: bool
    category: str  # the judge's category for kappa


def score_category(score: float) -> str:
    """The judge's category for a pair score: candidate above ½, baseline below, tie at ½."""
    if score > 0.5:
        return "candidate"
    return "baseline" if score < 0.5 else "tie"


def pair_score(order1: str, order2: str) -> PairScore:
    """The candidate's score for one pair from the verdicts of its two orders; ValueError
    for a verdict outside :data:`CATEGORIES`."""
    for verdict in (order1, order2):
        if verdict not in _VERDICT_SCORE:
            raise ValueError(f"unknown verdict {verdict!r}; expected one of {CATEGORIES}")
    score = (_VERDICT_SCORE[order1] + _VERDICT_SCORE[order2]) / 2
    flip = {order1, order2} == {"baseline", "candidate"}
    return PairScore(score, flip, score_category(score))


@dataclass(frozen=True)
class WinRate(Record):
    win_rate: float | None  # mean score; None without pairs
    ci: tuple[float, float] | None  # 95% bootstrap over cases; None: see no_interval
    n: int  # pairs
    wins: int  # score 1
    losses: int  # score 0
    ties: int  # score ½ without a flip
    soft_wins: int  # score ¾
    soft_losses: int  # score ¼
    flips: int
    flip_rate: float | None
    flip_warning: bool  # flip_rate above FLIP_WARNING_RATE: the figure measures order
    cases: int = 0  # clusters resampled: a case's repeats are one
    method: str | None = None  # "percentile", or "bca" below FEW_CLUSTERS cases
    no_interval: str | None = None  # why there is no interval, when there is none


def win_rate(
    scores: Sequence[float],
    *,
    flips: int = 0,
    seed: int,
    clusters: Sequence[Hashable] | None = None,
    resamples: int = 10_000,
    min_n: int = MIN_N_FOR_INTERVAL,
) -> WinRate:
    """The candidate's win-rate over included pairs.

    ``scores`` are pair scores (each one of :data:`PAIR_SCORES`, else ValueError); ``flips``
    is how many of the ½ scores are flips rather than ties; ``clusters`` names each pair's
    case (each pair its own case without it). The interval resamples cases, each with all
    its pairs (:func:`~evalsite.core.stats.bootstrap.cluster_draws`, ``resamples`` draws
    from ``seed``): the 95% percentile interval from :data:`FEW_CLUSTERS` cases, BCa below.
    None, with the reason in ``no_interval``, below ``min_n`` cases or when every pair
    scored the same (a zero-width interval would claim certainty).
    """
    counts = _score_counts(scores)
    n = len(scores)
    if not 0 <= flips <= counts[2]:
        raise ValueError(f"flips must be between 0 and the {counts[2]} scores of 0.5")
    labels = cluster_index(clusters, n)
    cases = len(set(labels.tolist()))
    ci, method, reason = cluster_mean_interval(
        np.asarray(scores, dtype=float),
        labels,
        seed=seed,
        resamples=resamples,
        min_n=min_n,
        constant=lambda value: f"every pair scored {value:g}: no spread to give an interval",
        empty="no judged pairs",
    )
    flip_rate = flips / n if n else None
    return WinRate(
        win_rate=math.fsum(scores) / n if n else None,
        ci=ci,
        n=n,
        wins=counts[4],
        losses=counts[0],
        ties=counts[2] - flips,
        soft_wins=counts[3],
        soft_losses=counts[1],
        flips=flips,
        flip_rate=flip_rate,
        flip_warning=flip_rate is not None and flip_rate > FLIP_WARNING_RATE,
        cases=cases,
        method=method,
        no_interval=reason,
    )


def _score_counts(scores: Sequence[float]) -> list[int]:
    """How many of ``scores`` equal each of :data:`PAIR_SCORES`, in that order."""
    counts = dict.fromkeys(PAIR_SCORES, 0)
    for score in scores:
        if score not in counts:
            raise ValueError(f"{score!r} is not a pair score; expected one of {PAIR_SCORES}")
        counts[score] += 1
    return list(counts.values())
