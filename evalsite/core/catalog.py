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

import asyncio
import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx

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
    client: httpx.AsyncClient,
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
        async with asyncio.timeout(timeout_s):
            async with client.stream("GET", url, timeout=timeout_s) as response:
                if response.status_code != 200:
                    raise CatalogError(f"HTTP {response.status_code} from {url}")
                return await _bounded_body(response, max_bytes)
    except TimeoutError:
        raise CatalogError(f"no reply from {url} within {timeout_s:g}s") from None
    except httpx.TimeoutException as error:
        cause = error.__cause__
        # aiohttp's transport reports a refused or dropped connection as a ConnectTimeout.
        if cause is not None and not isinstance(cause, TimeoutError):
            reason = str(cause) or type(cause).__name__
            raise CatalogError(f"cannot connect to {url}: {reason}") from None
        raise CatalogError(f"no reply from {url} within {timeout_s:g}s") from None
    except httpx.HTTPError as error:
        raise CatalogError(f"{url}: {type(error).__name__}: {error}") from None


async def _bounded_body(response: httpx.Response, max_bytes: int) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > max_bytes:
            raise CatalogError(f"the reply is larger than {max_bytes:,} bytes")
    return bytes(body)


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
