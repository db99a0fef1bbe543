"""Plain factory functions for database tests: make_x(**overrides)."""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal

from django.contrib.auth import get_user_model

from evalsite.core.suites import parse_suite
from runs.models import Price, PriceTable, Run, SuiteVersion

_seq = itertools.count(1)

SMALL_SUITE = """\
suite: {name}
version: 1
models: [fake/small, fake/large]
judge: {{model: fake/large}}
tasks:
  - id: greet
    kind: rewrite
    prompt: "Say hello to {{{{who}}}}."
    cases:
      - {{id: one, vars: {{who: Ada}}}}
      - {{id: two, vars: {{who: Grace}}}}
"""


def make_user(**overrides):
    n = next(_seq)
    fields = {"username": f"user{n}", "password": "a-long-test-password"}
    fields.update(overrides)
    password = fields.pop("password")
    user = get_user_model().objects.create_user(**fields)
    user.set_password(password)
    user.save()
    return user


def make_price_table(rows: dict[str, tuple] | None = None, **overrides) -> PriceTable:
    n = next(_seq)
    fields = {"name": f"prices-test-{n}", "pinned": dt.date(2026, 11, 30), "active": False}
    fields.update(overrides)
    table = PriceTable.objects.create(**fields)
    rows = rows if rows is not None else {"fake/small": ("0.10", "0.40"), "fake/large": ("1", "4")}
    for model, (inp, out) in rows.items():
        Price.objects.create(
            table=table, model=model, input_per_mtok=Decimal(inp), output_per_mtok=Decimal(out)
        )
    return table


def small_suite_text(name: str = "tiny") -> str:
    return SMALL_SUITE.format(name=name)


def make_suite_version(text: str | None = None, **overrides) -> SuiteVersion:
    text = text or small_suite_text()
    loaded = parse_suite(text.encode(), filename="tiny.yaml", origin="upload")
    version, _ = SuiteVersion.objects.register(
        loaded, text, origin=overrides.pop("origin", SuiteVersion.Origin.UPLOAD), **overrides
    )
    return version


def make_run(**overrides) -> Run:
    n = next(_seq)
    fields = {
        "id": f"20261130T000000Z_test{n:04d}",
        "contestants": ["fake/small", "fake/large"],
        "cap_usd": Decimal("2.00"),
    }
    fields.update(overrides)
    fields.setdefault("suite_version", make_suite_version())
    fields.setdefault("price_table", make_price_table())
    return Run.objects.create(**fields)
