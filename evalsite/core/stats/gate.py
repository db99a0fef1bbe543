"""Whether the judge's win-rates may headline, and how many labels would change that (§9)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalsite.core.stats.kappa import Z_95, Kappa
from evalsite.core.stats.record import Record

GATE_STATUSES = ("no_labels", "kappa_undefined", "insufficient_labels", "below_floor", "ok")


@dataclass(frozen=True)
class Gate(Record):
    status: str  # one of GATE_STATUSES
    eligible: bool  # status == "ok"
    reason: str


def headline_gate(kappa: Kappa, *, min_labels: int, min_kappa: float) -> Gate:
    """The first of no_labels, kappa_undefined, insufficient_labels (n < ``min_labels``),
    below_floor (kappa < ``min_kappa``) that holds, else ok; with a one-line reason."""
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
    return Gate("ok", True, f"{stated} meets the floor {floor}")


def labels_needed(kappa: Kappa, *, min_kappa: float, min_labels: int) -> int | None:
    """How many more labels, at the current agreement, put the asymptotic interval's lower
    bound above ``min_kappa`` with at least ``min_labels`` labels; 0 if already so.

    At the current agreement kappa stays κ and se·√n stays s, so over N labels the lower
    bound is κ − z·s/√N, above the floor m once N > (z·s / (κ − m))². The answer is
    max(min_labels, ⌊(z·s / (κ − m))²⌋ + 1) − n. None when κ is undefined or κ ≤ m: no
    number of labels lifts the bound above the floor at that agreement.
    """
    if kappa.kappa is None or kappa.se is None or kappa.ci is None or kappa.kappa <= min_kappa:
        return None
    if kappa.n >= min_labels and kappa.ci[0] > min_kappa:
        return 0
    scale = kappa.se * math.sqrt(kappa.n)
    enough = max(min_labels, math.floor((Z_95 * scale / (kappa.kappa - min_kappa)) ** 2) + 1)
    return max(enough - kappa.n, 1)  # the interval above says more are needed


def _count(n: int) -> str:
    return f"{n} label" if n == 1 else f"{n} labels"


def _figures(kappa: float, floor: float) -> tuple[str, str]:
    """Kappa and the floor to two decimals, or more where two would print them equal."""
    for digits in range(2, 7):
        shown = f"{kappa:.{digits}f}", f"{floor:.{digits}f}"
        if shown[0] != shown[1] or kappa == floor:
            break
    return shown
