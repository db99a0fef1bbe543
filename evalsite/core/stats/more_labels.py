"""How many more labels the corrected win-rate needs (issue 33): for its interval to be
±:data:`CORRECTED_HALF_WIDTH`, and for it to leave 0.5 (enough to say which side is
better). Kappa's count, for its interval to be ±0.10, is one rule of its own:
:func:`~evalsite.core.stats.gate.labels_for_half_width`.

Each is a projection at the current figures: more labels drawn as the present ones were
keep the spread of the human-minus-judge differences as it is. A corrected win-rate's se²
has a part labels shrink, as 1/labels (the rectifier's), and a part they do not (the
judge's mean over the judged pairs, with its covariance with the rectifier):
``Corrected.variance_labels`` and ``Corrected.variance_judge``. With N labels in all the
half-width is t·√(judge + labels_part·n/N); when the judge's part alone is wider than the
target no number of labels reaches it, and the answer says so. t is Student's on the
labels − 1 degrees of freedom N labels would give.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalsite.core.stats.bootstrap import LEVEL
from evalsite.core.stats.kappa import Z_95
from evalsite.core.stats.ppi import Corrected
from evalsite.core.stats.record import Record
from evalsite.core.stats.student import t_quantile

CORRECTED_HALF_WIDTH = 0.05
_MOST = 10**9  # labels: beyond this a projection is "unreachable"
_NORMAL_FROM = 300  # degrees of freedom from which z stands for t (1.968 against 1.960)


@dataclass(frozen=True)
class Wanted(Record):
    more: int | None  # labels beyond those given; 0 when the figure is already there
    why: str | None  # why there is no count (unreachable, or no figure to project from)


def labels_for_variance(
    labels: int, *, fixed: float, shrinking: float, half_width: float
) -> int | None:
    """The fewest labels in all (at least ``labels``) whose interval t·√(fixed +
    shrinking·labels/N) is at most ``half_width``, t on N − 1 degrees of freedom (z from
    300); None when none is (the fixed part alone is too wide)."""
    if labels < 1 or half_width <= 0:
        raise ValueError("a projection needs a label and a positive half-width")

    def half(total: int) -> float:
        df = max(1, total - 1)
        factor = t_quantile(LEVEL, df) if df < _NORMAL_FROM else Z_95  # t's cost grows with df
        return factor * math.sqrt(max(fixed + shrinking * labels / total, 0.0))

    if fixed >= (half_width / Z_95) ** 2 or half(_MOST) > half_width:
        return None
    low, high = labels, labels
    while half(high) > half_width:
        low, high = high, high * 2
    while low < high:
        middle = (low + high) // 2
        low, high = (middle + 1, high) if half(middle) > half_width else (low, middle)
    return high


def labels_for_corrected(corrected: Corrected, half_width: float = CORRECTED_HALF_WIDTH) -> Wanted:
    """More labels for the corrected win-rate's 95% interval to be ±``half_width``."""
    return _corrected_to(corrected, half_width, f"±{half_width:g}")


def labels_to_decide(corrected: Corrected) -> Wanted:
    """More labels for the corrected interval to exclude 0.5, at the current estimate: 0
    when it does; None when the estimate is 0.5 or the judge's part alone is too wide."""
    if corrected.win_rate is None or corrected.ci is None:
        return _no_figure(corrected)
    low, high = corrected.ci
    if low > 0.5 or high < 0.5:
        return Wanted(0, None)
    distance = abs(corrected.win_rate - 0.5)
    if distance == 0:
        return Wanted(None, "the corrected estimate is 0.5: at it no number of labels decides")
    return _corrected_to(corrected, distance, f"{distance:.3f} from 0.5 (the estimate's distance)")


def _corrected_to(corrected: Corrected, half_width: float, target: str) -> Wanted:
    if corrected.win_rate is None or corrected.ci is None:
        return _no_figure(corrected)
    fixed, shrinking = corrected.variance_judge, corrected.variance_labels
    if fixed is None or shrinking is None:
        return Wanted(None, "the corrected figure does not say which part of its variance "
                            "labels shrink")  # fmt: skip
    low, high = corrected.ci
    if max(corrected.win_rate - low, high - corrected.win_rate) <= half_width:
        return Wanted(0, None)
    n = corrected.n_labelled
    total = labels_for_variance(n, fixed=fixed, shrinking=shrinking, half_width=half_width)
    if total is None:
        alone = Z_95 * math.sqrt(max(fixed, 0.0))
        why = f"the judge's own term alone is ±{alone:.3f}, not within {target}"
        return Wanted(None, f"{why}: more labels cannot narrow it, more judged pairs can")
    if total > corrected.n_judged:
        return Wanted(None, f"about {total} labels in all, more than the "
                            f"{corrected.n_judged} judged pairs")  # fmt: skip
    return Wanted(total - n, None)


def _no_figure(corrected: Corrected) -> Wanted:
    if corrected.suppressed:
        return Wanted(None, f"no corrected win-rate yet: {corrected.suppressed}")
    return Wanted(None, f"no corrected interval: {corrected.no_interval or 'none'}")
