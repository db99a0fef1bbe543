"""Dated price tables, their rows, and admin-defined endpoints; where price tables meet the
database: the shipped default, the active table, imports and exports."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from importlib import resources

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models, transaction

from evalsite.core.money import MoneyError, parse_rate
from evalsite.core.pricing import (
    PriceRow,
    PriceSheet,
    Resolution,
    dump_price_yaml,
    parse_price_yaml,
    resolve_models,
)
from evalsite.core.providers import EndpointConfig
from evalsite.core.providers.endpoints import base_url_problem, key_variable_problem
from runs.models.suites import identifier


class FrozenPriceTable(ValidationError):
    """Raised when something tries to change a table a run has used."""


class NoActivePriceTable(LookupError):
    def __str__(self) -> str:
        return (
            "no active price table: import one with `evalsite prices import FILE --activate` "
            "or mark one active in the admin"
        )


def default_sheet() -> PriceSheet:
    """The price table evalsite ships."""
    text = resources.files("evalsite.data").joinpath("prices-default.yaml").read_text("utf-8")
    return parse_price_yaml(text)


class PriceTableQuerySet(models.QuerySet["PriceTable"]):
    def active(self) -> PriceTable | None:
        return self.filter(active=True).first()

    def current(self) -> PriceTable:
        """The active table; NoActivePriceTable when there is none."""
        table = self.active()
        if table is None:
            raise NoActivePriceTable()
        return table

    @transaction.atomic
    def ensure_default(self) -> PriceTable | None:
        """Load the shipped table and make it active when there is no table at all."""
        if self.exists():
            return None
        table = self.model.create_from_sheet(default_sheet())
        table.mark_active()
        return table

    def import_text(
        self, text: str, *, name: str | None = None, activate: bool = False
    ) -> PriceTable:
        """A new table from evalmine's price YAML (raises PriceFileError on bad input)."""
        return self.import_sheet(parse_price_yaml(text), name=name, activate=activate)

    @transaction.atomic
    def import_sheet(
        self, sheet: PriceSheet, *, name: str | None = None, activate: bool = False
    ) -> PriceTable:
        """A new table from a parsed price file (its `unused` lines are the caller's to say)."""
        table = self.model.create_from_sheet(sheet, name=name)
        if activate:
            table.mark_active()
        return table


class PriceTable(models.Model):
    name = models.CharField(max_length=100, unique=True)
    pinned = models.DateField(help_text="The date the prices were read.")
    currency = models.CharField(max_length=3, default="USD")
    verified = models.BooleanField(
        default=False, help_text="Every row checked against the provider's page on the date."
    )
    notes = models.TextField(blank=True)
    source = models.CharField(max_length=500, blank=True)
    active = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PriceTableQuerySet.as_manager()

    class Meta:
        ordering = ["-pinned", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["active"], condition=models.Q(active=True), name="one_active_price_table"
            )
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None and self.is_frozen:
            stored = PriceTable.objects.get(pk=self.pk)
            changed = [
                f.name
                for f in self._meta.concrete_fields
                if f.name not in {"active"}
                and getattr(stored, f.attname) != getattr(self, f.attname)
            ]
            if changed:
                raise FrozenPriceTable(
                    f"price table {stored.name} was used by a run and is frozen; "
                    "duplicate it as a new dated table to change it"
                )
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        if self.is_frozen:
            raise FrozenPriceTable(f"price table {self.name} was used by a run and is frozen")
        return super().delete(*args, **kwargs)

    @property
    def is_frozen(self) -> bool:
        """A table a run has used cannot change: its runs' costs must stay reproducible."""
        return self.pk is not None and self.runs.exists()

    def resolve(self, models: list[str]) -> Resolution:
        """Which of `models` this table prices (core.pricing.resolve_models)."""
        return resolve_models(models, self.prices.values_list("model", flat=True))

    def export_yaml(self) -> str:
        return dump_price_yaml(self.to_sheet())

    @transaction.atomic
    def mark_active(self) -> None:
        PriceTable.objects.filter(active=True).exclude(pk=self.pk).update(active=False)
        if not self.active:
            self.active = True
            super().save(update_fields=["active"])

    def as_dict(self) -> dict:
        """The table's identity as the verbs print it in JSON (`prices`, `models`)."""
        return {
            "table": self.name,
            "pinned": self.pinned.isoformat(),
            "currency": self.currency,
            "verified": self.verified,
        }

    def to_sheet(self) -> PriceSheet:
        return PriceSheet(
            pinned=self.pinned,
            currency=self.currency,
            verified=self.verified,
            notes=self.notes,
            source=self.source,
            rows=tuple(price.to_row() for price in self.prices.order_by("model")),
        )

    @classmethod
    @transaction.atomic
    def create_from_sheet(cls, sheet: PriceSheet, *, name: str | None = None) -> PriceTable:
        table = cls.objects.create(
            name=name or cls.unused_name(f"prices-{sheet.pinned.isoformat()}"),
            pinned=sheet.pinned,
            currency=sheet.currency,
            verified=sheet.verified,
            notes=sheet.notes,
            source=sheet.source,
        )
        Price.objects.bulk_create(Price.from_row(table, row) for row in sheet.rows)
        return table

    @transaction.atomic
    def duplicate(self, *, pinned: dt.date | None = None) -> PriceTable:
        """A new, editable, unverified copy dated `pinned` (today by default)."""
        sheet = self.to_sheet()
        pinned = pinned or dt.date.today()
        copy = PriceSheet(pinned, sheet.currency, False, sheet.notes, sheet.source, sheet.rows)
        return PriceTable.create_from_sheet(copy)

    @classmethod
    def unused_name(cls, base: str) -> str:
        name, n = base, 1
        while cls.objects.filter(name=name).exists():
            n += 1
            name = f"{base}-{n}"
        return name


RATE_FIELDS = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok")


class Price(models.Model):
    table = models.ForeignKey(PriceTable, on_delete=models.CASCADE, related_name="prices")
    model = models.CharField(
        max_length=200,
        validators=[
            RegexValidator(
                r"^[a-z0-9][a-z0-9_-]*/[A-Za-z0-9][A-Za-z0-9._/-]*$",
                "A model string is provider/model, e.g. openai/gpt-4o-mini.",
            )
        ],
    )
    input_per_mtok = models.DecimalField("input $/Mtok", max_digits=12, decimal_places=6)
    output_per_mtok = models.DecimalField("output $/Mtok", max_digits=12, decimal_places=6)
    cached_input_per_mtok = models.DecimalField(
        "cached input $/Mtok", max_digits=12, decimal_places=6, null=True, blank=True
    )
    source_url = models.URLField(max_length=500, blank=True)
    read_on = models.DateField(null=True, blank=True)
    legacy = models.BooleanField(
        default=False,
        help_text="An older model, retired or on its way out: the row prices older runs and "
        "imported suites, and `evalsite init` never offers it.",
    )

    class Meta:
        ordering = ["model"]
        constraints = [
            models.UniqueConstraint(fields=["table", "model"], name="price_unique_model"),
            models.CheckConstraint(
                condition=models.Q(input_per_mtok__gte=0, output_per_mtok__gte=0),
                name="price_non_negative",
            ),
        ]

    def __str__(self) -> str:
        return self.model

    def save(self, *args, **kwargs) -> None:
        self._refuse_if_frozen()
        self.clean()  # a row written around the admin is held to the same bounds
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        self._refuse_if_frozen()
        return super().delete(*args, **kwargs)

    def clean(self) -> None:
        """Each rate by the rule every door reads rates with (money.parse_rate: 0 to
        $100,000 per million tokens, six places), so the admin's form, its list and a
        table's inline store what a price file may hold and nothing more."""
        problems = {}
        for field in RATE_FIELDS:
            value = getattr(self, field)
            if value is not None:
                try:
                    parse_rate(value, what="the rate")
                except MoneyError as error:
                    problems[field] = str(error)
        if problems:
            raise ValidationError(problems)

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0]

    def _refuse_if_frozen(self) -> None:
        if self.table.is_frozen:
            raise FrozenPriceTable(
                f"price table {self.table.name} was used by a run and is frozen; "
                "duplicate it as a new dated table to change its prices"
            )

    def rates(self) -> dict[str, str | None]:
        """The row's prices per Mtok as exact decimal text, as the verbs print them in JSON."""
        return {
            "input_per_mtok": decimal_text(self.input_per_mtok),
            "output_per_mtok": decimal_text(self.output_per_mtok),
            "cached_input_per_mtok": decimal_text(self.cached_input_per_mtok),
        }

    def to_row(self) -> PriceRow:
        return PriceRow(
            model=self.model,
            input_per_mtok=self.input_per_mtok,
            output_per_mtok=self.output_per_mtok,
            cached_input_per_mtok=self.cached_input_per_mtok,
            source=self.source_url,
            read_on=self.read_on,
            legacy=self.legacy,
        )

    @classmethod
    def from_row(cls, table: PriceTable, row: PriceRow) -> Price:
        return cls(
            table=table,
            model=row.model,
            input_per_mtok=row.input_per_mtok,
            output_per_mtok=row.output_per_mtok,
            cached_input_per_mtok=row.cached_input_per_mtok,
            source_url=row.source,
            read_on=row.read_on,
            legacy=row.legacy,
        )


class EndpointQuerySet(models.QuerySet["Endpoint"]):
    def configs(self) -> dict[str, EndpointConfig]:
        """The endpoints as the providers read them, by name."""
        return {e.name: EndpointConfig(e.name, e.base_url, e.key_env_var) for e in self}


class Endpoint(models.Model):
    """An OpenAI-compatible server; models on it are `<name>/<model>`. Holds no key: it
    names the variable holding it, an EVALSITE_ENDPOINT_<NAME>_KEY (clean() and, again,
    building its provider refuse any other, and a link-local or metadata base URL)."""

    name = models.CharField(max_length=64, unique=True, validators=[identifier])
    base_url = models.URLField(max_length=500)
    key_env_var = models.CharField(
        "key environment variable",
        max_length=100,
        blank=True,
        validators=[RegexValidator(r"^[A-Z_][A-Z0-9_]*$", "The NAME of a variable, not a key.")],
        help_text="The name of the environment variable that holds the key, never the key.",
    )
    notes = models.TextField(blank=True)

    objects = EndpointQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # A blank URL already has the field's own "required" message.
        problems = {
            "key_env_var": key_variable_problem(self.key_env_var),
            "base_url": self.base_url and base_url_problem(self.base_url),
        }
        errors = {field: problem for field, problem in problems.items() if problem}
        if errors:
            raise ValidationError(errors)


def decimal_text(value: Decimal | None) -> str | None:
    """`value` as plain decimal text without trailing zeros (``0.15``, not ``0.150000``)."""
    return None if value is None else f"{value.normalize():f}"
