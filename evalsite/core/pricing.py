"""Price tables as plain values: evalmine's price YAML, cost of a call, model resolution.

Money is Decimal throughout. Missing usage gives no cost (None), never 0. The database
keeps money as whole nano-USD (:func:`to_nano`), so its sums are exact integer arithmetic.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, cast

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
    """A price YAML file that cannot be read: every problem, each naming its row and field."""

    def __init__(self, *problems: str):
        super().__init__("; ".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class PriceRow:
    model: str
    input_per_mtok: Decimal
    output_per_mtok: Decimal
    cached_input_per_mtok: Decimal | None = None
    source: str = ""
    read_on: dt.date | None = None
    # an older model, retired or on its way out: kept to price older runs and imported
    # suites, never offered as a default (`evalsite init`)
    legacy: bool = False

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
    # what the file said that a table does not keep, one line each (`prices import` notes)
    unused: tuple[str, ...] = field(default=(), compare=False)


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


# A dated snapshot or the moving `-latest` alias of a model, at the end of its id:
# `-20241022`, `-2024-11-20`, `-latest`, and the month-and-day form `-0613` of the models
# OpenAI named that way, gpt-3.5-turbo and gpt-4
# (docs/prices.md#dated-snapshots-and-latest-aliases).
_SNAPSHOT = re.compile(
    r"-(?:(?P<compact>\d{8})|(?P<iso>\d{4}-\d{2}-\d{2})|(?P<month_day>\d{4})|latest)$"
)
_MONTH_DAY_MODELS = re.compile(r"openai/gpt-(?:3\.5-turbo|4)(?:-16k|-32k)?")


def snapshot_of(model: str) -> str | None:
    """The model `model` is a dated snapshot or `-latest` alias of (the same string without
    that suffix), or None when it ends in no such suffix. A date must be a real one; a month
    and day alone (`gpt-4-0613`) only for the OpenAI models that were named so."""
    match = _SNAPSHOT.search(model)
    if match is None:
        return None
    if match["month_day"] is not None and not _MONTH_DAY_MODELS.fullmatch(model[: match.start()]):
        return None
    day = match["compact"] or match["iso"] or (match["month_day"] and f"2000{match['month_day']}")
    if day:
        try:
            dt.datetime.strptime(day.replace("-", ""), "%Y%m%d")
        except ValueError:
            return None
    base = model[: match.start()]
    return base if base.partition("/")[2] else None


def priced_as(model: str, table_models: Collection[str]) -> str | None:
    """The row of `table_models` that prices `model`: its own; else, for a dated snapshot or
    a `-latest` alias, the row of the model it is one of (same provider, same id without
    the suffix); else None. The one rule every door prices a model by: the provider is
    still sent `model`, only the price row is borrowed. `table_models` are the rows' own
    model strings (a :class:`PriceRows` answers `in` by this rule already)."""
    if model in table_models:
        return model
    base = snapshot_of(model)
    if base is not None and base in table_models:
        return base
    return model if free_variant(model) else None


def free_variant(model: str) -> bool:
    """OpenRouter's ``:free`` variant of a model (``openrouter/google/gemma-4-31b-it:free``):
    $0 a token, OpenRouter's rate-limited free tier. Without a row of its own it is priced by
    :data:`FREE_ROW`'s zero rates, said once (docs/prices.md)."""
    provider, _, name = model.partition("/")
    return provider == "openrouter" and name.endswith(":free") and "/" in name.removesuffix(":free")


FREE_SOURCE = "OpenRouter's :free variant: $0 a token"


def free_row(model: str) -> PriceRow:
    """The zero-rate row a free variant without a row of its own is priced by."""
    zero = Decimal(0)
    return PriceRow(model, zero, zero, zero, source=FREE_SOURCE)


class PriceRows(Mapping[str, PriceRow]):
    """A table's rows by model string, looked up by :func:`priced_as`: a dated snapshot
    finds its model's row. Iterating gives the rows' own model strings."""

    def __init__(self, rows: Iterable[PriceRow]):
        self._rows = {row.model: row for row in rows}

    def __getitem__(self, model: str) -> PriceRow:
        found = priced_as(model, self._rows)
        if found is None:
            raise KeyError(model)
        return self._rows[found] if found in self._rows else free_row(found)

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


@dataclass(frozen=True)
class Resolution:
    """The outcome of resolving model strings against a table."""

    priced: tuple[str, ...]
    not_priced: tuple[str, ...]
    unknown: Mapping[str, str | None]  # model -> did-you-mean (or None)
    aliases: Mapping[str, str] = field(default_factory=dict)  # priced model -> its row's

    @property
    def ok(self) -> bool:
        return not self.unknown


def resolve_models(models: Iterable[str], table_models: Iterable[str]) -> Resolution:
    """Resolve model strings: priced by a row (its own, or by :func:`priced_as` its
    model's), not priced (scripted/command), or unknown."""
    known = set(table_models)
    priced, not_priced, unknown, aliases = [], [], {}, {}
    for model in sorted(set(models)):
        row = priced_as(model, known)
        if row is not None:
            priced.append(model)
            if row != model or row not in known:  # another's row, or a free variant's $0
                aliases[model] = row
        elif model.split("/", 1)[0] in UNPRICED_PROVIDERS:
            not_priced.append(model)
        else:
            unknown[model] = suggest_model(model, known)
    return Resolution(tuple(priced), tuple(not_priced), unknown, aliases)


def suggest(word: str, choices: Iterable[str]) -> str | None:
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


def typo_of(word: str, choices: Iterable[str], cutoff: float = 0.85) -> str | None:
    """The choice `word` is likely a misspelling of: alike to `cutoff` and with the same
    digits, since a digit changed names another thing ('o1' is not a typo of 'o4',
    'cache_write_30m_per_mtok' not of 'cache_write_5m_per_mtok'); None otherwise."""
    digits = re.sub(r"\D", "", word)
    alike = [choice for choice in choices if re.sub(r"\D", "", choice) == digits]
    matches = difflib.get_close_matches(word, alike, n=1, cutoff=cutoff)
    return matches[0] if matches else None


def suggest_model(model: str, table_models: Iterable[str]) -> str | None:
    """The row `model` is likely a typo of (:func:`typo_of` its id against the rows of its
    provider; with no row of that provider, the whole string: 'opena/gpt-4o'). None rather
    than another model's price: 'gpt-3.5-turbo' is not offered 'gpt-5-nano'."""
    provider, _, name = model.partition("/")
    known = sorted(set(table_models))
    same = {row.partition("/")[2]: row for row in known if row.partition("/")[0] == provider}
    if not same:
        return typo_of(model, known)
    found = typo_of(name, same)
    return same[found] if found else None


def priced_as_notes(aliases: Mapping[str, str]) -> list[str]:
    """What validate, run and the report say once for each model priced by another's row,
    or (a free variant, aliased to itself: :func:`resolve_models`) by :func:`free_row`."""
    return [_priced_as_note(model, row) for model, row in aliases.items()]


def _priced_as_note(model: str, row: str) -> str:
    if row == model and free_variant(model):
        return (
            f"{model} is priced at $0: OpenRouter's free variant (a rate-limited free tier); "
            "a row of its own would price it instead"
        )
    return f"{model} is priced as {row}: a dated snapshot or -latest alias of it ({model} is sent)"


# The file a row is added in: a copy of the active table, since a table a run used is frozen.
ADD_ROW_FILE = "prices.yaml"


def add_row_howto(model: str) -> str:
    """How to give `model` a row, with commands that work as written (docs/prices.md); for
    a dated snapshot or alias, the row of its model, which prices every snapshot of it."""
    row = snapshot_of(model) or model
    return (
        f"To price it, add a row for {row} to a copy of the table: "
        f"`evalsite prices export {ADD_ROW_FILE}`, add "
        f"`- {{model: {row}, input_per_mtok: USD, output_per_mtok: USD}}` under `models:` "
        "(USD per million tokens, from the provider's pricing page), then "
        f"`evalsite prices import {ADD_ROW_FILE} --activate` (or add the row in the admin)"
    )


def unknown_model_message(model: str, suggestion: str | None, table_name: str) -> str:
    """An unknown model: its did-you-mean when it looks like a typo of a row, and how to
    add its row (a legacy model, or one the table does not have yet)."""
    base = snapshot_of(model)
    also = f" for it or for {base}, the model it is a snapshot or alias of" if base else ""
    hint = f" - did you mean '{suggestion}'?" if suggestion else "."
    return f"unknown model '{model}': no row in price table {table_name}{also}{hint} " + (
        add_row_howto(model)
    )


# --- evalmine's price YAML -------------------------------------------------------------

SHEET_KEYS = {"pinned", "currency", "verified", "notes", "source", "models"}
ROW_KEYS = {
    "model",
    "input_per_mtok",
    "output_per_mtok",
    "cached_input_per_mtok",
    "source",
    "read_on",
    "legacy",
    "verified",  # folded into the table's: one row not verified makes the table unverified
    "notes",  # folded into the table's notes, "model: note"
}
# evalmine's prices evalsite does not charge: read (each a number), said, not stored
UNCHARGED_KEYS = {
    "cache_write_5m_per_mtok": "cache writes are not charged (every input token is priced "
    "at input_per_mtok, a cache read at cached_input_per_mtok)",
    "cache_write_1h_per_mtok": "cache writes are not charged (every input token is priced "
    "at input_per_mtok, a cache read at cached_input_per_mtok)",
    "long_context_threshold_tokens": "long-context prices are not charged (every call is "
    "priced at the base rates)",
    "long_context_input_multiplier": "long-context prices are not charged (every call is "
    "priced at the base rates)",
    "long_context_output_multiplier": "long-context prices are not charged (every call is "
    "priced at the base rates)",
}


class _Problems:
    """The problems of one file, gathered so every one is reported at once."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def read(self, reader: Callable[..., Any], *args: Any) -> Any:
        """`reader(*args)`, or None with its problem kept."""
        try:
            return reader(*args)
        except PriceFileError as error:
            self.found += error.problems
            return None


def parse_price_yaml(text: str) -> PriceSheet:
    """Parse evalmine's price YAML; raises PriceFileError with every problem, each naming
    its row and field."""
    try:
        data = load_yaml(text.encode("utf-8", "surrogatepass"), filename="price file").data
    except SuiteError as error:  # the same limits as every YAML evalsite reads
        raise PriceFileError(*(str(problem) for problem in error.problems)) from None
    if not isinstance(data, dict):
        raise PriceFileError("expected a mapping with pinned, currency, verified and models")
    problems = _Problems()
    problems.found += _unknown(data, SHEET_KEYS, "")
    pinned = None
    if "pinned" not in data:
        problems.found.append("missing 'pinned' (the date the prices were read)")
    else:
        pinned = problems.read(_date, data["pinned"], "pinned")
    verified = problems.read(_bool, data.get("verified", False), "verified")
    models = data.get("models")
    parsed: list[tuple[PriceRow, bool | None, str]] = []
    uncharged: dict[str, list[int]] = {}  # a key not charged -> the rows that give it
    if not isinstance(models, list) or not models:
        problems.found.append("'models' must be a non-empty list of rows")
    else:
        for index, item in enumerate(models):
            row = problems.read(_parse_row, item, index, uncharged)
            if row is not None:
                parsed.append(row)
    seen: set[str] = set()
    for index, (row, _, _) in enumerate(parsed):
        if row.model in seen:
            problems.found.append(f"models[{index}]: model '{row.model}' appears twice")
        seen.add(row.model)
    if problems.found:
        raise PriceFileError(*problems.found)
    assert pinned is not None
    row_notes = [f"{row.model}: {note}" for row, _, note in parsed if note]
    unverified = [
        f"models[{index}].verified: false ({row.model}): the table is stored as unverified"
        for index, (row, row_verified, _) in enumerate(parsed)
        if row_verified is False
    ]
    unused = [
        f"models[{','.join(map(str, rows))}].{key}: not stored: {UNCHARGED_KEYS[key]}"
        for key, rows in uncharged.items()
    ]
    if verified:
        unused += unverified
    return PriceSheet(
        pinned=pinned,
        currency=str(data.get("currency", "USD")),
        verified=bool(verified) and not unverified,
        notes="\n".join(filter(None, [str(data.get("notes") or "").strip(), *row_notes])),
        source=str(data.get("source") or ""),
        rows=tuple(row for row, _, _ in parsed),
        unused=tuple(unused),
    )


def _parse_row(
    item: Any, index: int, uncharged: dict[str, list[int]]
) -> tuple[PriceRow, bool | None, str]:
    """One row, its own `verified` (None when it says nothing) and its notes; the prices
    it gives that are not charged are noted in `uncharged`. Raises PriceFileError with
    every problem."""
    where = f"models[{index}]"
    if not isinstance(item, dict):
        raise PriceFileError(f"{where}: expected a mapping")
    problems = _Problems()
    problems.found += _unknown(item, ROW_KEYS | set(UNCHARGED_KEYS), where + ".")
    model = item.get("model")
    if not isinstance(model, str) or "/" not in model:
        problems.found.append(f"{where}.model: expected a 'provider/model' string")
    rates = {
        key: problems.read(_rate, item.get(key), f"{where}.{key}")
        for key in ("input_per_mtok", "output_per_mtok")
    }
    cached = item.get("cached_input_per_mtok")
    if cached is not None:
        cached = problems.read(_rate, cached, f"{where}.cached_input_per_mtok")
    read_on = item.get("read_on")
    if read_on is not None:
        read_on = problems.read(_date, read_on, f"{where}.read_on")
    verified = item.get("verified")
    if verified is not None:
        verified = problems.read(_bool, verified, f"{where}.verified")
    legacy = problems.read(_bool, item.get("legacy", False), f"{where}.legacy")
    for key in UNCHARGED_KEYS:
        if key in item and problems.read(_uncharged, item[key], f"{where}.{key}") is not None:
            uncharged.setdefault(key, []).append(index)
    if problems.found:
        raise PriceFileError(*problems.found)
    row = PriceRow(
        model=cast(str, model),  # a str: anything else is a problem, raised above
        input_per_mtok=rates["input_per_mtok"],
        output_per_mtok=rates["output_per_mtok"],
        cached_input_per_mtok=cached,
        source=str(item.get("source") or ""),
        read_on=read_on,
        legacy=bool(legacy),
    )
    return row, verified, str(item.get("notes") or "").strip()


# A key that names a price (or a price's rule): offered as a typo of a known one only when
# it is one (`input_per_mtk`), never as another price (`batch_input_per_mtok` is not
# `cached_input_per_mtok`, `cache_write_30m_per_mtok` not `cache_write_5m_per_mtok`).
_PRICE_KEY = re.compile(r"_per_|multiplier|threshold")
PRICE_KEYS_READ = (
    "evalsite charges input_per_mtok, output_per_mtok and cached_input_per_mtok, and reads "
    "cache_write_5m_per_mtok, cache_write_1h_per_mtok and long_context_threshold_tokens / "
    "_input_multiplier / _output_multiplier without storing them (docs/prices.md)"
)


def _unknown(data: dict[str, Any], allowed: set[str], prefix: str) -> list[str]:
    problems = []
    for key in data:
        if key not in allowed:
            price = bool(_PRICE_KEY.search(str(key)))
            hint = typo_of(str(key), allowed, 0.9) if price else suggest(str(key), allowed)
            tail = f" - did you mean '{hint}'?" if hint else ""
            reason = f": {PRICE_KEYS_READ}" if price and not hint else ""
            problems.append(f"{prefix}{key}: unknown key{tail}{reason}")
    return problems


def _uncharged(value: Any, where: str) -> Decimal:
    """A non-negative number the file gives but evalsite does not charge."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise PriceFileError(f"{where}: expected a number")
    if value < 0:
        raise PriceFileError(f"{where}: expected a number 0 or more")
    return Decimal(str(value))


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
    if row.legacy:
        out["legacy"] = True
    return out


def _number(value: Decimal) -> int | float:
    """A YAML number that reads back as the same Decimal (rates have few digits)."""
    normal = value.normalize()
    if normal == normal.to_integral_value():
        return int(normal)
    return float(normal)
