"""OpenRouter's model catalog (``GET {OPENROUTER_BASE_URL}/models``): fetched, read and
filtered for ``evalsite models``.

The reply is untrusted. :func:`fetch_catalog` reads at most :data:`MAX_CATALOG_BYTES` of a
200 reply and turns every other outcome (a non-200, a transport failure, a timeout, an
oversized body) into one :class:`CatalogError`. :func:`parse_catalog` needs an object with a
``data`` list; an entry of the wrong shape is skipped with its reason, never raised. Prices
arrive as per-token strings and are read as ``Decimal`` (numbers too: the JSON is parsed with
``parse_float=Decimal``), then scaled to USD per million tokens. A price that is missing,
negative or not a finite number (OpenRouter quotes -1 for its ``openrouter/*`` routers) is
unknown (None), which is never free. :func:`printable` neutralises control characters before
an id or name reaches a terminal.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from evalsite.core.providers.base import ErrorKind
from evalsite.core.providers.http_clients import HttpFailure

if TYPE_CHECKING:
    from evalsite.core.providers.http_clients import HttpClient

__all__ = [
    "FETCH_TIMEOUT_S",
    "MAX_CATALOG_BYTES",
    "Catalog",
    "CatalogError",
    "CatalogModel",
    "fetch_catalog",
    "parse_catalog",
    "parse_context",
    "printable",
    "select",
]

MAX_CATALOG_BYTES = 8_000_000  # the real catalog is well under 1 MB
FETCH_TIMEOUT_S = 30.0
MAX_ID_CHARS = 200
MAX_PRICE_CHARS = 40
PER_MTOK = Decimal(1_000_000)
_UNPRINTABLE = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # controls, bidi overrides, lone surrogates
_CONTEXT = re.compile(r"^\s*(\d{1,12})\s*([kKmM]?)\s*$")


class CatalogError(Exception):
    """The catalog could not be had at all; the message says why."""


@dataclass(frozen=True)
class CatalogModel:
    """One catalog entry; prices in USD per million tokens, None when unknown."""

    id: str
    name: str
    context_length: int | None
    input_per_mtok: Decimal | None
    output_per_mtok: Decimal | None
    cached_input_per_mtok: Decimal | None

    @property
    def model(self) -> str:
        """The evalsite model string that calls it."""
        return f"openrouter/{self.id}"

    @property
    def vendor(self) -> str:
        return self.id.partition("/")[0]

    @property
    def free(self) -> bool:
        return self.id.endswith(":free") or (self.input_per_mtok == 0 and self.output_per_mtok == 0)


@dataclass(frozen=True)
class Catalog:
    models: tuple[CatalogModel, ...]
    skipped: tuple[str, ...]  # one reason per malformed entry, naming its index


async def fetch_catalog(
    client: HttpClient,
    url: str,
    *,
    timeout_s: float = FETCH_TIMEOUT_S,
    max_bytes: int | None = None,
) -> bytes:
    """The body of a 200 reply to ``GET url``, read to at most ``max_bytes`` (default
    :data:`MAX_CATALOG_BYTES`); CatalogError for anything else. No key is sent: the catalog
    is public."""
    max_bytes = MAX_CATALOG_BYTES if max_bytes is None else max_bytes
    try:
        reply = await client.fetch(
            "GET",
            url,
            headers={},
            body=None,
            timeout_s=timeout_s,
            max_bytes=max_bytes,
            too_big=lambda: CatalogError(f"the reply is larger than {max_bytes:,} bytes"),
        )
    except HttpFailure as failure:
        if failure.kind == ErrorKind.TIMEOUT:
            raise CatalogError(f"no reply from {url} within {timeout_s:g}s") from None
        if failure.kind == ErrorKind.NETWORK:
            raise CatalogError(f"cannot connect to {url}: {failure.reason}") from None
        raise CatalogError(f"{url}: {failure.reason}") from None
    if reply.status != 200:
        raise CatalogError(f"HTTP {reply.status} from {url}")
    return reply.body


def parse_catalog(data: bytes) -> Catalog:
    """The catalog's entries sorted by id, and the reason for each one skipped."""
    try:
        document = json.loads(data.decode("utf-8"), parse_float=Decimal)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CatalogError("the reply is not JSON") from None
    entries = document.get("data") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise CatalogError("the reply has no data list")
    models: dict[str, CatalogModel] = {}
    skipped: list[str] = []
    for index, entry in enumerate(entries):
        model = _entry(entry)
        if isinstance(model, str):
            skipped.append(f"data[{index}]: {model}")
        elif model.id in models:
            skipped.append(f"data[{index}]: a second entry for {printable(model.id)}")
        else:
            models[model.id] = model
    return Catalog(tuple(sorted(models.values(), key=lambda m: m.id)), tuple(skipped))


def _entry(entry: Any) -> CatalogModel | str:
    """The entry as a CatalogModel, or the reason it is unusable."""
    if not isinstance(entry, dict):
        return "not an object"
    model_id, name = entry.get("id"), entry.get("name", "")
    if not isinstance(model_id, str) or not model_id.strip():
        return "no id"
    if len(model_id) > MAX_ID_CHARS:
        return f"an id longer than {MAX_ID_CHARS} characters"
    if not isinstance(name, str):
        return f"{printable(model_id)}: name is not text"
    context = entry.get("context_length")
    if context is not None and (type(context) is not int or context < 0):
        return f"{printable(model_id)}: context_length is not a whole number"
    pricing = entry.get("pricing")
    if not isinstance(pricing, dict):
        return f"{printable(model_id)}: no pricing object"
    return CatalogModel(
        id=model_id,
        name=name,
        context_length=context,
        input_per_mtok=_per_mtok(pricing.get("prompt")),
        output_per_mtok=_per_mtok(pricing.get("completion")),
        cached_input_per_mtok=_per_mtok(pricing.get("input_cache_read")),
    )


def _per_mtok(value: Any) -> Decimal | None:
    """A per-token price as USD per million tokens; None when missing or unusable."""
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        return None
    text = str(value).strip()
    if len(text) > MAX_PRICE_CHARS:
        return None
    try:
        per_token = Decimal(text)
        if not per_token.is_finite() or per_token < 0:
            return None
        return (per_token * PER_MTOK).normalize()
    except ArithmeticError:  # InvalidOperation, and an overflow of the context
        return None


def select(
    models: Iterable[CatalogModel],
    *,
    free: bool = False,
    min_context: int | None = None,
    vendor: str | None = None,
) -> list[CatalogModel]:
    """The models that pass every filter given; an unknown context length fails
    ``min_context``. ``vendor`` is the id's first part; ``openrouter`` keeps them all."""
    return [
        m
        for m in models
        if (not free or m.free)
        and (min_context is None or (m.context_length or 0) >= min_context)
        and (vendor in (None, "openrouter") or m.vendor == vendor)
    ]


def parse_context(text: str) -> int:
    """``131072``, ``100k`` (100,000) or ``1m`` as a number of tokens; ValueError otherwise."""
    match = _CONTEXT.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a context length (e.g. 131072, 100k, 1m)")
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2).lower()]
    return int(match.group(1)) * scale


def printable(text: str) -> str:
    """``text`` with every control, format (bidi) and lone-surrogate character shown as
    its ``\\uXXXX`` escape, so a name cannot move the cursor, recolour or reorder a line."""
    return "".join(
        f"\\u{ord(char):04x}" if unicodedata.category(char) in _UNPRINTABLE else char
        for char in text
    )
