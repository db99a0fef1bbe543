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

# bench/active_labels.py: on a judge with the human-vs-judge disagreement of the two real
# pair sets (/work/shared/data/pairsets), an agreed verdict is wrong often enough (13-19%)
# that sampling it much less costs more than it saves: at a floor of 0.2 active sampling
# needed more labels than uniform; from 0.5 up it is never worse by more than a few percent
# and saves where a judge's errors do sit on its flips. 0.5 also keeps the queue at least
# half the run, so a team is not left without pairs to label.
FLOOR = 0.5
# the real judges' ties and splits disagree with humans about as much as their agreed
# verdicts (E(y − f)² 0.18-0.22 against 0.13-0.23), so they are sampled like them, a little
# above: flips (E(y − f)² 0.25, every one half wrong) carry the uncertainty
MIDDLE = 0.5
# a run of 40 pairs (e.g. 20 cases × 2 repeats) is labelled in full: below MIN_QUEUE / FLOOR
# pairs the floor rises so the queue keeps MIN_QUEUE pairs at the least
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
