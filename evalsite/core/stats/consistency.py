"""Judge self-consistency (``judge.consistency: k``): the same pair, in the same order,
asked again k times. A flip is the judge following the position; a changed verdict on the
same question is the judge answering at random. Different failures, so both are shown.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from evalsite.core.judging import CONSISTENCY_SAMPLE_PAIRS
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


def sample_pairs(keys: Sequence[int], seed: str, size: int = SAMPLE_PAIRS) -> list[int]:
    """A seeded sample of ``size`` of the pair ``keys`` (all of them when fewer), sorted."""
    ordered = sorted(keys)
    return sorted(random.Random(seed).sample(ordered, min(size, len(ordered))))


def self_consistency(rows: Sequence[tuple[int, str, str]], k: int) -> Consistency:
    """From (pair key, first verdict, extra verdict) rows, one per extra judgement whose
    reply was read (in either order, each against the first verdict of its own order):
    the share of extra verdicts that agree."""
    agree = sum(1 for _, first, again in rows if first == again)
    unstable = {pair for pair, first, again in rows if first != again}
    pairs = {pair for pair, _, _ in rows}
    return Consistency(
        k, len(pairs), len(rows), agree, agree / len(rows) if rows else None, len(unstable)
    )
