"""Price tables as plain values: evalmine's price YAML, cost of a call, model resolution.

Money is Decimal throughout. Missing usage gives no cost (None), never 0. The database
keeps money as whole nano-USD (:func:`to_nano`), so its sums are exact integer arithmetic.
"""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import yaml

from evalsite.core.money import MoneyError, parse_rate
from evalsite.core.problems import SuiteError
from evalsite.core.yamlsafe import load_yaml

MTOK = Decimal(1_000_000)
NANO_PER_USD = 10**9
# The most tokens one count of a call's usage is taken as: 100 times the largest context
# window of 2026, so no honest report reaches it, and a larger one (10^30, 1e308) is
# counted as this, which fits every column and keeps its cost a storable amount.
MAX_USAGE_TOKENS = 10**8
# Providers whose models cost nothing unless the table has a row for them (`given/…` is the
# judge lab's stand-in for answers that were supplied, never requested).
UNPRICED_PROVIDERS = frozenset({"scripted", "command", "given"})


class PriceFileError(ValueError):
    """A price YAML file that cannot be read; the message names the row and field."""


@dataclass(frozen=True)
class PriceRow:
    model: str
    input_per_mtok: Decimal
    output_per_mtok: Decimal
    cached_input_per_mtok: Decimal | None = None
    source: str = ""
    read_on: dt.date | None = None

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0]


@dataclass(frozen=True)
class PriceSheet:
    """A whole dated table: what evalmine's price YAML holds."""

    pinned: dt.date
    currency: str = "USD"
    verified: bool = False
    notes: str = ""
    source: str = ""
    rows: tuple[PriceRow, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0


def call_cost(row: PriceRow, usage: Usage | None) -> Decimal | None:
    """Cost of one call in USD; None when the usage is unknown."""
    if usage is None:
        return None
    cached_rate = row.cached_input_per_mtok
    if cached_rate is None:
        cached_rate = row.input_per_mtok
    total = (
        usage.input_tokens * row.input_per_mtok
        + usage.output_tokens * row.output_per_mtok
        + usage.cached_input_tokens * cached_rate
    )
    return total / MTOK


def to_nano(usd: Decimal | int | str) -> int:
    """`usd` in whole nano-USD (1e-9 USD), rounded half-even: how money is stored.

    Rounding is monotonic, so a cost at or below its reservation stays at or below it.
    """
    return int((Decimal(usd) * NANO_PER_USD).to_integral_value(ROUND_HALF_EVEN))


def from_nano(nano: int | Decimal) -> Decimal:
    """Whole nano-USD back to USD, exactly (``from_nano(to_nano(x))`` is `x` to the nano)."""
    return Decimal(nano) / NANO_PER_USD


@dataclass(frozen=True)
class Resolution:
    """The outcome of resolving model strings against a table."""

    priced: tuple[str, ...]
    not_priced: tuple[str, ...]
    unknown: Mapping[str, str | None]  # model -> did-you-mean (or None)

    @property
    def ok(self) -> bool:
        return not self.unknown


def resolve_models(models: Iterable[str], table_models: Iterable[str]) -> Resolution:
    """Resolve model strings: priced by a row, not priced (scripted/command), or unknown."""
    known = sorted(set(table_models))
    priced, not_priced, unknown = [], [], {}
    for model in sorted(set(models)):
        if model in known:
            priced.append(model)
        elif model.split("/", 1)[0] in UNPRICED_PROVIDERS:
            not_priced.append(model)
        else:
            unknown[model] = suggest(model, known)
    return Resolution(tuple(priced), tuple(not_priced), unknown)


def suggest(word: str, choices: Iterable[str]) -> str | None:
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


def unknown_model_message(model: str, suggestion: str | None, table_name: str) -> str:
    hint = f" - did you mean '{suggestion}'?" if suggestion else ""
    return f"unknown model '{model}': no row in price table {table_name}{hint}"


# --- evalmine's price YAML -------------------------------------------------------------

SHEET_KEYS = {"pinned", "currency", "verified", "notes", "source", "models"}
ROW_KEYS = {
    "model",
    "input_per_mtok",
    "output_per_mtok",
    "cached_input_per_mtok",
    "source",
    "read_on",
}


def parse_price_yaml(text: str) -> PriceSheet:
    """Parse evalmine's price YAML; raises PriceFileError naming the row and field."""
    try:
        data = load_yaml(text.encode("utf-8", "surrogatepass"), filename="price file").data
    except SuiteError as error:  # the same limits as every YAML evalsite reads
        raise PriceFileError("; ".join(str(problem) for problem in error.problems)) from None
    if not isinstance(data, dict):
        raise PriceFileError("expected a mapping with pinned, currency, verified and models")
    _refuse_unknown(data, SHEET_KEYS, "")
    if "pinned" not in data:
        raise PriceFileError("missing 'pinned' (the date the prices were read)")
    models = data.get("models")
    if not isinstance(models, list) or not models:
        raise PriceFileError("'models' must be a non-empty list of rows")
    rows = tuple(_parse_row(item, index) for index, item in enumerate(models))
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if row.model in seen:
            raise PriceFileError(f"models[{index}]: model '{row.model}' appears twice")
        seen.add(row.model)
    return PriceSheet(
        pinned=_date(data["pinned"], "pinned"),
        currency=str(data.get("currency", "USD")),
        verified=_bool(data.get("verified", False), "verified"),
        notes=str(data.get("notes") or ""),
        source=str(data.get("source") or ""),
        rows=rows,
    )


def _parse_row(item: Any, index: int) -> PriceRow:
    where = f"models[{index}]"
    if not isinstance(item, dict):
        raise PriceFileError(f"{where}: expected a mapping")
    _refuse_unknown(item, ROW_KEYS, where + ".")
    model = item.get("model")
    if not isinstance(model, str) or "/" not in model:
        raise PriceFileError(f"{where}.model: expected a 'provider/model' string")
    cached = item.get("cached_input_per_mtok")
    read_on = item.get("read_on")
    return PriceRow(
        model=model,
        input_per_mtok=_rate(item.get("input_per_mtok"), f"{where}.input_per_mtok"),
        output_per_mtok=_rate(item.get("output_per_mtok"), f"{where}.output_per_mtok"),
        cached_input_per_mtok=None
        if cached is None
        else _rate(cached, f"{where}.cached_input_per_mtok"),
        source=str(item.get("source") or ""),
        read_on=None if read_on is None else _date(read_on, f"{where}.read_on"),
    )


def _refuse_unknown(data: dict, allowed: set[str], prefix: str) -> None:
    for key in data:
        if key not in allowed:
            hint = suggest(str(key), allowed)
            tail = f" - did you mean '{hint}'?" if hint else ""
            raise PriceFileError(f"{prefix}{key}: unknown key{tail}")


def _rate(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or value is None:
        raise PriceFileError(f"{where}: expected a number of USD per million tokens")
    try:
        return parse_rate(value, what="the rate")
    except MoneyError as error:
        raise PriceFileError(f"{where}: {error}") from None


def _date(value: Any, where: str) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise PriceFileError(f"{where}: '{value}' is not a date (YYYY-MM-DD)") from None


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise PriceFileError(f"{where}: expected true or false")
    return value


def dump_price_yaml(sheet: PriceSheet) -> str:
    """Render a sheet in evalmine's price YAML; parse_price_yaml reads it back unchanged."""
    document = {
        "pinned": sheet.pinned.isoformat(),
        "currency": sheet.currency,
        "verified": sheet.verified,
        "notes": sheet.notes,
        "source": sheet.source,
        "models": [_row_dict(row) for row in sheet.rows],
    }
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


def _row_dict(row: PriceRow) -> dict[str, Any]:
    out: dict[str, Any] = {
        "model": row.model,
        "input_per_mtok": _number(row.input_per_mtok),
        "output_per_mtok": _number(row.output_per_mtok),
    }
    if row.cached_input_per_mtok is not None:
        out["cached_input_per_mtok"] = _number(row.cached_input_per_mtok)
    if row.source:
        out["source"] = row.source
    if row.read_on is not None:
        out["read_on"] = row.read_on.isoformat()
    return out


def _number(value: Decimal) -> int | float:
    """A YAML number that reads back as the same Decimal (rates have few digits)."""
    normal = value.normalize()
    if normal == normal.to_integral_value():
        return int(normal)
    return float(normal)
