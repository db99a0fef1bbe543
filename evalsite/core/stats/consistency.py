"""Judge self-consistency (``judge.consistency: k``): the same pair, in the same order,
asked again k times. A flip is the judge following the position; a changed verdict on the
same question is the judge answering at random. Different failures, so both are shown.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evalsite.core.judging import CONSISTENCY_SAMPLE_PAIRS
from evalsite.core.stats.bootstrap import cluster_index, cluster_mean_interval
from evalsite.core.stats.pairs import MIN_N_FOR_INTERVAL
from evalsite.core.stats.record import Record

SAMPLE_PAIRS = CONSISTENCY_SAMPLE_PAIRS


@dataclass(frozen=True)
class Consistency(Record):
    k: int  # extra judgements asked of each sampled pair, in each order
    pairs: int  # sampled pairs with at least one extra verdict read
    verdicts: int  # extra verdicts read, each compared with its order's first verdict
    agree: int
    agreement: float | None  # agree / verdicts; None without any
    unstable_pairs: int  # pairs with at least one extra verdict that differs
    ci: tuple[float, float] | None = None  # 95% bootstrap over cases; None: see no_interval
    cases: int = 0  # cases the sampled pairs come from
    method: str | None = None  # "percentile", or "bca" below 30 cases
    no_interval: str | None = None


def sample_pairs(keys: Sequence[int], seed: str, size: int = SAMPLE_PAIRS) -> list[int]:
    """A seeded sample of ``size`` of the pair ``keys`` (all of them when fewer), sorted."""
    ordered = sorted(keys)
    return sorted(random.Random(seed).sample(ordered, min(size, len(ordered))))


def self_consistency(
    rows: Sequence[tuple[int, str, str]],
    k: int,
    *,
    cases: Mapping[int, Hashable] | None = None,
    seed: int = 0,
    resamples: int = 10_000,
) -> Consistency:
    """From (pair key, first verdict, extra verdict) rows, one per extra judgement whose
    reply was read (in either order, each against the first verdict of its own order):
    the share of extra verdicts that agree, with its interval over cases (``cases`` maps a
    pair key to its case; each pair its own without it): a case's repeats and extra
    verdicts are one cluster, resampled as the win-rate's are."""
    agree = sum(1 for _, first, again in rows if first == again)
    unstable = {pair for pair, first, again in rows if first != again}
    pairs = {pair for pair, _, _ in rows}
    labels = cluster_index([(cases or {}).get(pair, pair) for pair, _, _ in rows], len(rows))
    ci, method, reason = cluster_mean_interval(
        np.array([float(first == again) for _, first, again in rows]),
        labels,
        seed=seed,
        resamples=resamples,
        min_n=MIN_N_FOR_INTERVAL,
        constant=lambda value: (
            f"every extra verdict {'agreed' if value else 'differed'}: no spread to give an "
            "interval"
        ),
        empty="no extra verdict was read",
    )
    return Consistency(
        k, len(pairs), len(rows), agree, agree / len(rows) if rows else None, len(unstable),
        ci, len(set(labels.tolist())), method, reason,
    )  # fmt: skip
