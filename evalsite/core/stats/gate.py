"""Whether the judge's win-rates may headline, and how many labels would change that (§9);
and the words every page says a gate status, a stale kappa and a missing band in
(:func:`gate_words`, :func:`band_words`), so no member reads a raw code."""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalsite.core.stats.kappa import Z_95, CaseInterval, Kappa
from evalsite.core.stats.record import Record

GATE_STATUSES = (
    "no_labels", "kappa_undefined", "insufficient_labels", "below_floor", "below_lower_bound", "ok",
)  # fmt: skip
HALF_WIDTH = 0.10  # "labels needed for an interval of ±0.10"
GATE_WORDS = {
    "ok": "calibrated",
    "no_labels": "no labels yet",
    "kappa_undefined": "agreement not measurable yet",
    "insufficient_labels": "too few labels yet",
    "below_floor": "judge agreement below the floor",
    "below_lower_bound": "judge agreement not yet sure enough",
}
NOT_CALIBRATED = "not calibrated"  # no gate was checked: no judge, a run without a report
STALE = "stale: the judge changed"  # the kappa measured another judge configuration


@dataclass(frozen=True)
class Gate(Record):
    status: str  # one of GATE_STATUSES
    eligible: bool  # status == "ok"
    reason: str


def headline_gate(
    kappa: Kappa,
    *,
    min_labels: int,
    min_kappa: float,
    min_lower_bound: float | None = None,
    interval: CaseInterval | None = None,
) -> Gate:
    """The first of no_labels, kappa_undefined, insufficient_labels (n < ``min_labels``),
    below_floor (kappa < ``min_kappa``), below_lower_bound (with ``min_lower_bound``: the
    lower bound of kappa's case ``interval`` below it, or no interval) that holds, else ok;
    with a one-line reason."""
    labels = _count(kappa.n)
    if kappa.n == 0:
        return Gate("no_labels", False, "no labelled pairs to compare the judge with")
    if kappa.kappa is None:
        return Gate(
            "kappa_undefined",
            False,
            f"kappa is undefined over {labels}: humans and judge chose one category throughout",
        )
    value, floor = _figures(kappa.kappa, min_kappa)
    stated = f"kappa {value} ({kappa.band}) over {labels}"
    if kappa.n < min_labels:
        return Gate("insufficient_labels", False, f"{stated}; the gate needs {min_labels}")
    if kappa.kappa < min_kappa:
        return Gate("below_floor", False, f"{stated} is below the floor {floor}")
    if min_lower_bound is not None:
        bound = _lower_bound(interval, min_lower_bound)
        if bound is not None:
            return Gate("below_lower_bound", False, f"{stated} meets the floor {floor}; {bound}")
    return Gate("ok", True, f"{stated} meets the floor {floor}")


def _lower_bound(interval: CaseInterval | None, wanted: float) -> str | None:
    """Why kappa's interval fails ``min_kappa_lower_bound``; None when it meets it."""
    if interval is None or interval.ci is None:
        why = interval.why_none if interval else "no interval"
        return f"no kappa interval ({why}); the gate needs a lower bound of {wanted:.2f}"
    low, high = interval.ci
    if low >= wanted:
        return None
    shown, floor = _figures(low, wanted)
    return (
        f"its 95% interval [{low:.2f}, {high:.2f}] over {interval.cases} cases has lower "
        f"bound {shown}, below {floor}"
    )


def labels_needed(kappa: Kappa, *, min_kappa: float, min_labels: int) -> int | None:
    """How many more labels, at the current agreement, put the asymptotic interval's lower
    bound above ``min_kappa`` with at least ``min_labels`` labels; 0 if already so.

    At the current agreement kappa stays κ and se·√n stays s, so over N labels the lower
    bound is κ − z·s/√N, above the floor m once N > (z·s / (κ − m))². The answer is
    max(min_labels, ⌊(z·s / (κ − m))²⌋ + 1) − n. None when κ is undefined or κ ≤ m: no
    number of labels lifts the bound above the floor at that agreement. Weighted kappa's se
    (1/π, active sampling) projects alike: n counts labels drawn with the same mix of π.
    """
    if kappa.kappa is None or kappa.se is None or kappa.ci is None or kappa.kappa <= min_kappa:
        return None
    if kappa.n >= min_labels and kappa.ci[0] > min_kappa:
        return 0
    scale = kappa.se * math.sqrt(kappa.n)
    enough = max(min_labels, math.floor((Z_95 * scale / (kappa.kappa - min_kappa)) ** 2) + 1)
    return max(enough - kappa.n, 1)  # the interval above says more are needed


def labels_for_half_width(kappa: Kappa, interval: CaseInterval | None) -> int | None:
    """Labels, in all, for kappa's 95% interval to be ±HALF_WIDTH at the current agreement,
    marginals and clustering: the case interval's se·√n stays s, so N labels give a half-width
    of z·s/√N, at most HALF_WIDTH once N ≥ (z·s / HALF_WIDTH)². Without a case interval, the
    Fleiss–Cohen–Everitt se. Weighted by 1/π (active sampling) it holds as it is: n counts
    labels, and more labels drawn with the same mix of π keep the weighted se·√n. The
    one projection of kappa's labels: the report, the calibration page and the terminal read
    it. None when kappa has no standard error."""
    se = interval.se if interval is not None and interval.ci is not None else kappa.se
    if kappa.kappa is None or not se or kappa.n == 0:
        return None
    return math.ceil((Z_95 * se * math.sqrt(kappa.n) / HALF_WIDTH) ** 2)


def gate_words(status: str | None) -> str:
    """A gate status in words (``below_floor``: "judge agreement below the floor";
    ``stale``: a kappa of another judge configuration); any other, "not calibrated"."""
    if status == "stale":
        return STALE
    return GATE_WORDS.get(str(status or ""), NOT_CALIBRATED)


def band_words(band: str | None, *, low_n: bool = False) -> str:
    """A kappa's Landis–Koch band, or why it has none (too few labels, or undefined)."""
    if band:
        return band
    return "no band: too few labels" if low_n else "no band: kappa undefined"


def _count(n: int) -> str:
    return f"{n} label" if n == 1 else f"{n} labels"


def _figures(kappa: float, floor: float) -> tuple[str, str]:
    """Kappa and the floor to two decimals, or more where two would print them equal."""
    for digits in range(2, 7):
        shown = f"{kappa:.{digits}f}", f"{floor:.{digits}f}"
        if shown[0] != shown[1] or kappa == floor:
            break
    return shown
