"""Money from the outside world (SPEC §16): a cap or a price is read here, once, and bounded,
so no value that reaches the database can overflow its column or break a page.

A cap is a positive number of USD of at most :data:`MAX_CAP_USD` with at most six decimal
places (the column's); a price is a rate of USD per million tokens from 0 to
:data:`MAX_RATE_USD`, at most six decimal places. Anything else is a :class:`MoneyError`
whose message names what was given and what is allowed.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["MAX_CAP_USD", "MAX_RATE_USD", "PLACES", "MoneyError", "parse_cap", "parse_rate"]

PLACES = 6  # the money columns' decimal places
MAX_CAP_USD = Decimal("100000")  # a cap above $100,000 is a typo, not a budget
MAX_RATE_USD = Decimal("100000")  # per million tokens: 160 times the dearest model of 2026
_STEP = Decimal(1).scaleb(-PLACES)


class MoneyError(ValueError):
    """An amount that cannot be used; the message says why."""


def _shown(value: Any) -> str:
    text = str(value).strip()
    return text if len(text) <= 24 else text[:20] + "…"


def _decimal(value: Any, what: str) -> Decimal:
    # A boolean is an int to Python (True would be $1): never an amount. Nor is a list or
    # a map a door handed on (MCP's JSON arguments).
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise MoneyError(f"{what} must be a number of USD")
    text = str(value).strip()
    if len(text) > 40:
        raise MoneyError(f"{what} {_shown(text)} is not a usable number of USD")
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise MoneyError(f"{what} {text!r} is not a number of USD") from None
    if not amount.is_finite():
        raise MoneyError(f"{what} must be a finite number of USD, not {text}")
    return amount


def parse_cap(value: Any, *, what: str = "the cap") -> Decimal:
    """A spend cap in USD: positive, at most $100,000, whole micro-dollars."""
    amount = _decimal(value, what)
    if amount <= 0:
        raise MoneyError(f"{what} must be a positive number of USD")
    if amount > MAX_CAP_USD:
        raise MoneyError(f"{what} ${_shown(value)} is over the largest cap, ${MAX_CAP_USD:f}")
    return _whole_micros(amount, value, what)


def parse_rate(value: Any, *, what: str = "the price") -> Decimal:
    """A price in USD per million tokens: 0 to $100,000, whole micro-dollars."""
    amount = _decimal(value, what)
    if amount < 0:
        raise MoneyError(f"{what} must be 0 or more USD per million tokens")
    if amount > MAX_RATE_USD:
        raise MoneyError(f"{what} ${_shown(value)} per million tokens is over ${MAX_RATE_USD:f}")
    return _whole_micros(amount, value, what)


def _whole_micros(amount: Decimal, value: Any, what: str) -> Decimal:
    if amount != amount.quantize(_STEP):
        raise MoneyError(f"{what} has more than {PLACES} decimal places: {_shown(value)}")
    return amount.quantize(_STEP)
