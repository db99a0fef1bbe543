"""Which judged pairs the sample queue asks a label for: active sampling (issue 33).

Zrnic & Candès, "Active statistical inference" (ICML 2024): ask for a label more often
where the judge is unsure, and weight each label by 1/π, the inverse of the probability it
was asked for, so the corrected win-rate stays unbiased
(:func:`~evalsite.core.stats.ppi.ppi_weighted_mean`). The queue scans the run's seeded,
task-stratified random order and asks for pair i when a keyed uniform coin u_i < π_i,
recording π_i on the label.

A pair's uncertainty h is 1 for a flip (the two orders disagreed), :data:`MIDDLE` for a
split or a tie (a score strictly between 0 and 1 without a flip) and 0 for a decisive
verdict both orders agreed on; π = min(1, floor + (1 − floor)·h). The floor keeps every
probability away from zero (a weight of 1/π is at most 1/floor, so no label can swing the
estimate) and is raised on small runs so the queue holds at least :data:`MIN_QUEUE` pairs.
"""

from __future__ import annotations

# `bench/active_labels.py --tune` (150 runs): the labels active sampling needs for the
# width uniform sampling has at 120. Judged like the real pair sets (an agreed verdict
# wrong 13%): floor 0.2 needs 150, 0.3 126-132, 0.5 111-116, 0.7 109-110 (uniform sampling
# read by the same estimator ≈ 111). A judge whose agreed verdicts are wrong 1%: floor 0.2
# needs 81-110, 0.5 89-100, 0.7 100-105. 0.5 costs at most a few percent where a judge's
# errors are not on its flips and saves about a fifth where they are; and the queue holds
# at least half the run, so labellers do not run out of pairs.
FLOOR = 0.5
# ties and splits: the real judges' ties are about as far from the humans in squared error
# as their agreed verdicts (E(y − f)² 0.18-0.22 against 0.13-0.23); a sure judge's splits
# and ties are nearly as unsure as its flips (middle 1 needs 89 labels, 0.5 92, 0 100).
# Between the two; on the pair-set judge the middle changes little (111-116).
MIDDLE = 0.5
# at 60 labels the corrected interval is about ±0.12 (bench: width 0.243 on 900 pairs):
# fewer says little, so a run under MIN_QUEUE / FLOOR = 120 pairs gets a higher floor and
# one of at most 60 pairs is labelled in full. A judgement, not tuned further.
MIN_QUEUE = 60


def uncertainty(score: float, flip: bool | None, *, middle: float = MIDDLE) -> float:
    """How unsure the judge was of a pair: 1 for a flip, ``middle`` for a split or a tie
    (0 < score < 1), 0 for a decisive verdict both orders agreed on (score 0 or 1). ``flip``
    None (one order only) counts as no flip. ValueError for a score outside [0, 1]."""
    if not 0 <= score <= 1:
        raise ValueError(f"a pair score is in [0, 1], not {score!r}")
    if flip:
        return 1.0
    return middle if 0 < score < 1 else 0.0


def floor_for(pairs: int, *, floor: float = FLOOR) -> float:
    """The least probability in a run of ``pairs`` judged pairs: ``floor``, raised to
    MIN_QUEUE / pairs (at most 1) on a small run."""
    if pairs < 1:
        raise ValueError(f"a run with {pairs} judged pairs has nothing to sample")
    return max(floor, min(1.0, MIN_QUEUE / pairs))


def sampling_probability(
    score: float, flip: bool | None, *, pairs: int, floor: float = FLOOR, middle: float = MIDDLE
) -> float:
    """The probability π that the queue asks for a label on a judged pair with this
    ``score`` (the candidate's, both orders combined) and ``flip``, in a run of ``pairs``
    judged pairs: min(1, floor + (1 − floor)·h), h the pair's :func:`uncertainty`.
    ``floor`` and ``middle`` are for the bench that chose :data:`FLOOR` and :data:`MIDDLE`."""
    least = floor_for(pairs, floor=floor)
    return min(1.0, least + (1 - least) * uncertainty(score, flip, middle=middle))
