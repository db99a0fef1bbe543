"""`evalsite models [--provider P] [--json] [--catalog | --no-catalog] [--free]
[--min-context N]`: the active price table's models and whether their keys are set, and
OpenRouter's catalog."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Mapping
from decimal import Decimal

from django.core.management.base import CommandParser

from evalsite.core.catalog import (
    Catalog,
    CatalogError,
    CatalogModel,
    fetch_catalog,
    parse_catalog,
    parse_context,
    printable,
    select,
)
from evalsite.core.exitcodes import ExitCode
from evalsite.core.providers import (
    KEY_VARIABLES,
    EndpointConfig,
    ProviderError,
    make_client,
    required_key,
)
from evalsite.core.providers.openai import OPENROUTER_BASE_URL
from evalsite.management import EvalsiteCommand
from runs.models import Endpoint, NoActivePriceTable, Price, PriceTable
from runs.models.pricing import decimal_text

CATALOG_URL = f"{OPENROUTER_BASE_URL}/models"
OPENROUTER_KEY = KEY_VARIABLES["openrouter"]
NAME_CHARS = 40


class Command(EvalsiteCommand):
    help = "List the price table's models and whether their keys are set, and OpenRouter's."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--provider", help="Only this provider's models (e.g. anthropic).")
        parser.add_argument("--json", action="store_true", help="Print everything as JSON.")
        shown = parser.add_mutually_exclusive_group()
        shown.add_argument(
            "--catalog",
            action="store_true",
            help=f"Fetch OpenRouter's catalog even when {OPENROUTER_KEY} is not set.",
        )
        shown.add_argument(
            "--no-catalog",
            action="store_true",
            help=f"Do not fetch OpenRouter's catalog even when {OPENROUTER_KEY} is set.",
        )
        parser.add_argument(
            "--free",
            action="store_true",
            help=f"Only the catalog's free models (the catalog: {OPENROUTER_KEY} or --catalog).",
        )
        parser.add_argument(
            "--min-context",
            type=_context_argument,
            metavar="N",
            help="Only catalog models with at least N tokens of context: 131072, 100k, 1m.",
        )

    def handle(self, *args, **options):
        provider = options["provider"]
        try:
            table = PriceTable.objects.current()
        except NoActivePriceTable as exc:
            self.fail(str(exc))
        rows = [row for row in table.prices.all() if provider in (None, row.provider)]
        keys = _key_statuses(rows, os.environ, Endpoint.objects.configs())
        if not options["json"]:
            self._print_table(table, rows, keys, provider)
        catalog, problem = None, None
        if _wants_catalog(options, os.environ):
            catalog, problem = _catalog()
        else:
            for note in _unfetched_filters(options):
                self.stderr.write(note)
        shown = [] if catalog is None else _selected(catalog, provider, options)
        if options["json"]:
            document = _table_dict(table, rows, keys)
            document["catalog"] = _catalog_dict(catalog, shown, table) if catalog else None
            document["catalog_error"] = problem
            self.stdout.write(json.dumps(document, indent=2))
        elif catalog is not None:
            self._print_catalog(catalog, shown, table, options)
        if problem:
            self.fail(f"could not fetch the OpenRouter catalog: {problem}", ExitCode.RUNTIME_ERROR)

    def _print_table(self, table: PriceTable, rows, keys: dict[str, str], provider) -> None:
        flag = "verified" if table.verified else "UNVERIFIED"
        self.stdout.write(
            f"price table {table.name}  pinned {table.pinned}  {flag}  {table.currency}/Mtok"
        )
        if not rows:
            providers = sorted({row.provider for row in table.prices.all()})
            self.stdout.write(
                f"  no models of provider {printable(provider or '')!r} in this table "
                f"(its providers: {', '.join(providers)})"
            )
            return
        width = max(len("model"), *(len(row.model) for row in rows))
        self.stdout.write(
            f"  {'model':<{width}}  {'provider':<10} {'input':>9} {'output':>9} "
            f"{'cached in':>9}  key"
        )
        for row in rows:
            self.stdout.write(
                f"  {row.model:<{width}}  {row.provider:<10} {_money(row.input_per_mtok):>9} "
                f"{_money(row.output_per_mtok):>9} {_money(row.cached_input_per_mtok, '-'):>9}  "
                f"{keys[row.model]}"
            )

    def _print_catalog(self, catalog: Catalog, shown, table: PriceTable, options) -> None:
        filters = ["--free"] if options["free"] else []
        if options["min_context"] is not None:
            filters.append(f"--min-context {options['min_context']}")
        if options["provider"]:
            filters.append(f"--provider {printable(options['provider'])}")
        note = f", {len(shown)} shown ({' '.join(filters)})" if filters else ""
        key = "set" if _key_set(os.environ, OPENROUTER_KEY) else "not set"
        self.stdout.write(
            f"\nOpenRouter catalog: {len(catalog.models)} models{note}; "
            f"{OPENROUTER_KEY} {key}; USD/Mtok"
        )
        priced = set(table.prices.values_list("model", flat=True))
        width = max(len("model"), *(len(printable(m.model)) for m in shown)) if shown else 5
        self.stdout.write(
            f"  {'model':<{width}}  {'context':>9} {'input':>9} {'output':>9} {'cached in':>9}"
            f"  free  in table  name"
        )
        for m in shown:
            self.stdout.write(
                f"  {printable(m.model):<{width}}  {_context(m.context_length):>9} "
                f"{_money(m.input_per_mtok, '?'):>9} {_money(m.output_per_mtok, '?'):>9} "
                f"{_money(m.cached_input_per_mtok, '-'):>9}  {'free' if m.free else '-':<4}  "
                f"{'yes' if m.model in priced else '-':<8}  {_short(printable(m.name))}"
            )
        if catalog.skipped:
            count = len(catalog.skipped)
            self.stderr.write(
                f"warning: skipped {count} malformed catalog "
                f"{'entry' if count == 1 else 'entries'}: {'; '.join(catalog.skipped[:3])}"
            )


def _context_argument(text: str) -> int:
    try:
        return parse_context(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _wants_catalog(options: Mapping, env: Mapping[str, str]) -> bool:
    """The catalog is fetched with the key or --catalog: nothing else reaches the network
    (--free and --min-context filter a catalog fetched for one of those)."""
    if options["no_catalog"]:
        return False
    return options["catalog"] or _key_set(env, OPENROUTER_KEY)


def _unfetched_filters(options: Mapping) -> list[str]:
    """A note per catalog filter given when the catalog is not fetched."""
    filters = ["--free"] if options["free"] else []
    filters += ["--min-context"] if options["min_context"] is not None else []
    if options["no_catalog"]:
        return [
            f"note: {name} filters OpenRouter's catalog, which --no-catalog leaves unfetched"
            for name in filters
        ]
    return [
        f"note: {name} filters OpenRouter's catalog, which is fetched only when "
        f"{OPENROUTER_KEY} is set or with --catalog: add --catalog to fetch it (it is "
        "public: no key is sent)"
        for name in filters
    ]


def _catalog() -> tuple[Catalog | None, str | None]:
    """The catalog, or None and why it could not be had."""
    try:
        return parse_catalog(asyncio.run(_fetch())), None
    except CatalogError as error:
        return None, printable(str(error))


async def _fetch() -> bytes:
    async with make_client(max_connections=1) as client:
        return await fetch_catalog(client, CATALOG_URL)


def _selected(catalog: Catalog, provider: str | None, options: Mapping) -> list[CatalogModel]:
    return select(
        catalog.models, free=options["free"], min_context=options["min_context"], vendor=provider
    )


def _key_set(env: Mapping[str, str], variable: str) -> bool:
    return bool(env.get(variable, "").strip())


def _key_statuses(
    rows: list[Price], env: Mapping[str, str], endpoints: Mapping[str, EndpointConfig]
) -> dict[str, str]:
    """{model: "set" | "not set: VARIABLE" | "no key needed" | "unknown provider" |
    "endpoint refused"};
    only the variable's name is ever read out, never its value."""
    statuses = {}
    for row in rows:
        try:
            variable = required_key(row.model, endpoints=endpoints)
        except ProviderError:
            refused = row.provider in endpoints  # its key variable is not an endpoint's
            statuses[row.model] = "endpoint refused" if refused else "unknown provider"
            continue
        if variable is None:
            statuses[row.model] = "no key needed"
        else:
            statuses[row.model] = "set" if _key_set(env, variable) else f"not set: {variable}"
    return statuses


def _money(value: Decimal | None, missing: str = "?") -> str:
    text = decimal_text(value)
    return missing if text is None else text


def _context(value: int | None) -> str:
    return "?" if value is None else str(value)


def _short(text: str) -> str:
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 1] + "…"


def _table_dict(table: PriceTable, rows: list[Price], keys: dict[str, str]) -> dict:
    return table.as_dict() | {
        "models": [
            {"model": row.model, "provider": row.provider, **row.rates(), "key": keys[row.model]}
            for row in rows
        ],
    }


def _catalog_dict(catalog: Catalog, shown: list[CatalogModel], table: PriceTable) -> dict:
    priced = set(table.prices.values_list("model", flat=True))
    return {
        "source": CATALOG_URL,
        "total": len(catalog.models),
        "skipped": list(catalog.skipped),
        "models": [
            {
                "model": m.model,
                "id": m.id,
                "name": m.name,
                "context_length": m.context_length,
                "input_per_mtok": decimal_text(m.input_per_mtok),
                "output_per_mtok": decimal_text(m.output_per_mtok),
                "cached_input_per_mtok": decimal_text(m.cached_input_per_mtok),
                "free": m.free,
                "in_price_table": m.model in priced,
            }
            for m in shown
        ],
    }
