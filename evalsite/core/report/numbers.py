"""How a report prints numbers, the same in every output.

Rates with 3 decimals, kappa with 2 and its Landis–Koch band, money in dollars with 4
decimals (6 below a cent, so a small non-zero cost never prints as $0.0000), intervals as
``[lo, hi]`` (``[-0.85, -0.15]`` reads as two numbers; ``[-0.85--0.15]`` did not). A
missing value prints as ``n/a``, never as 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

__all__ = [
    "BANDS", "MISSING", "cases", "count", "interval", "interval_or_reason", "kappa", "money",
    "rate", "rate_n", "signed_money", "signed_rate",
]  # fmt: skip

MISSING = "n/a"
BANDS = ("poor", "slight", "fair", "moderate", "substantial", "almost perfect")


def rate(value: float | None) -> str:
    return MISSING if value is None else f"{value:.3f}"


def signed_rate(value: float | None) -> str:
    return MISSING if value is None else f"{value:+.3f}"


def rate_n(value: float | None, n: int | None) -> str:
    """A rate with its n beside it: ``0.950 (n=40)``."""
    return f"{rate(value)} (n={count(n)})"


def count(value: int | None) -> str:
    return MISSING if value is None else str(int(value))


def money[Amount: (float, Decimal)](value: Amount | None, *, digits: int | None = None) -> str:
    """Dollars to 4 decimals, 6 below a cent so small costs stay visible; ``digits`` fixes
    the places (the terminal's cost line always shows 4, as SPEC §13 prints it). `value` is
    a report's float or a row's Decimal (runs.models.run.MoneyField)."""
    if value is None:
        return MISSING
    sign = "-" if value < 0 else ""
    amount = abs(value)
    if digits is None:
        digits = 6 if 0 < amount < 0.01 else 4
    return f"{sign}${amount:.{digits}f}"


def signed_money(value: float | None) -> str:
    if value is None:
        return MISSING
    return money(value) if value < 0 else "+" + money(value)


def kappa(value: float | None, band: str | None = None) -> str:
    """``0.25 (fair)``; ``undefined`` when there is no kappa. A band that is not one of
    Landis–Koch's is left out rather than printed."""
    if value is None:
        return "undefined"
    return f"{value:.2f} ({band})" if band in BANDS else f"{value:.2f}"


def interval(ci: Sequence[float] | None, digits: int = 3) -> str | None:
    """``[0.325, 0.613]``, or None when there is no interval."""
    if not ci or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return None
    low, high = ci
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


_FEW = {"bca": " few cases", "t": " few labels"}  # the small-sample methods, said beside


def interval_or_reason(row: Mapping[str, Any], digits: int = 3) -> str:
    """A figure's ``ci`` with "few cases" (or "few labels") beside it when a small-sample
    method made it, or why
    there is none (``no_interval``): ``[0.45, 0.90] few cases``, ``no interval (too few
    cases …)``."""
    shown = interval(row.get("ci"), digits)
    if shown:
        return shown + _FEW.get(str(row.get("method")), "")
    reason = row.get("no_interval")
    return f"no interval ({reason})" if reason else "no interval"


def cases(row: Mapping[str, Any], unit: str = "pairs") -> str:
    """A figure's n as cases, with its ``unit`` count (``row["n"]``) beside it when they
    differ: ``10 cases (30 pairs)``. A report from before cases were counted shows its n
    alone."""
    pairs = int(row.get("n") or 0)
    counted = row.get("cases")
    if counted is None:
        return str(pairs)
    text = f"{counted} case" if counted == 1 else f"{counted} cases"
    return text if counted == pairs else f"{text} ({pairs} {unit})"


def signed_interval(ci: Sequence[float] | None, digits: int = 3) -> str:
    """``[-0.090, +0.010]``: an interval of a change or a slope; "no interval" without one."""
    if not ci:
        return "no interval"
    return f"[{ci[0]:+.{digits}f}, {ci[1]:+.{digits}f}]"
