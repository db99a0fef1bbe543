"""Where price tables meet the database: the shipped default, the active table, imports."""

from __future__ import annotations

from importlib import resources

from django.db import transaction

from evalsite.core.pricing import (
    PriceSheet,
    Resolution,
    dump_price_yaml,
    parse_price_yaml,
    resolve_models,
)
from runs.models import PriceTable


class NoActivePriceTable(LookupError):
    def __str__(self) -> str:
        return (
            "no active price table: import one with `evalsite prices import FILE --activate` "
            "or mark one active in the admin"
        )


def default_sheet() -> PriceSheet:
    text = resources.files("evalsite.data").joinpath("prices-default.yaml").read_text("utf-8")
    return parse_price_yaml(text)


@transaction.atomic
def ensure_default_table() -> PriceTable | None:
    """Load the shipped table and make it active when there is no table at all."""
    if PriceTable.objects.exists():
        return None
    table = PriceTable.create_from_sheet(default_sheet())
    table.mark_active()
    return table


def active_table() -> PriceTable:
    table = PriceTable.objects.active()
    if table is None:
        raise NoActivePriceTable()
    return table


def resolve_against(table: PriceTable, models: list[str]) -> Resolution:
    return resolve_models(models, table.prices.values_list("model", flat=True))


def import_table(text: str, *, name: str | None = None, activate: bool = False) -> PriceTable:
    """Create a new table from evalmine's price YAML (raises PriceFileError on bad input)."""
    return import_sheet(parse_price_yaml(text), name=name, activate=activate)


@transaction.atomic
def import_sheet(
    sheet: PriceSheet, *, name: str | None = None, activate: bool = False
) -> PriceTable:
    """Create a new table from a parsed price file (its `unused` lines are the caller's to say)."""
    table = PriceTable.create_from_sheet(sheet, name=name)
    if activate:
        table.mark_active()
    return table


def export_table(table: PriceTable) -> str:
    return dump_price_yaml(table.to_sheet())
