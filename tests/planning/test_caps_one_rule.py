"""One home for each rule (issue 29). Every cap (`--max-cost`, the new-run form, MCP's
max_cost, the judge lab's form, the suite's `limits.max_cost_usd`) is read by money.parse_cap,
with its words: positive, at most $100,000, at most six decimal places, never rounded. The
calibration floor's defaults (kappa 0.40 over 10 labels) are suite_parts' and the pages say them."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from evalsite.core.money import MoneyError, parse_cap
from evalsite.core.suites import SuiteError, parse_suite
from lab.views import JudgeRunForm
from runs.forms import CapField
from tests.helpers.factories import make_suite_version, make_user

SUITE = """suite: capped
version: 1
models: [fake/small]
limits: {{max_cost_usd: {cap}}}
tasks:
  - id: one
    prompt: hi
    cases: [{{id: a}}]
"""


def suite_problems(cap: str) -> list[str]:
    with pytest.raises(SuiteError) as refused:
        parse_suite(SUITE.format(cap=cap).encode(), filename="capped.yaml")
    return [problem.message for problem in refused.value.problems]


def the_rules_words(cap: str) -> str:
    with pytest.raises(MoneyError) as refused:
        parse_cap(cap, what="the cap")
    return str(refused.value)


def test_a_lab_cap_of_seven_decimals_is_refused_as_the_web_refuses_it():
    lab = JudgeRunForm({"model": "fake/judge", "max_cost": "0.1234567"})

    assert not lab.is_valid()
    assert lab.errors["max_cost"] == [the_rules_words("0.1234567")]
    with pytest.raises(ValidationError) as web:
        CapField().clean("0.1234567")
    assert web.value.messages == lab.errors["max_cost"]


def test_a_lab_cap_of_six_decimals_is_kept_exactly():
    lab = JudgeRunForm({"model": "fake/judge", "max_cost": "0.123456"})

    assert lab.is_valid() and lab.cleaned_data["max_cost"] == Decimal("0.123456")


@pytest.mark.parametrize("cap", ["0.1234567", "0", "-1", "200000"])
def test_a_suite_cap_out_of_the_rule_is_refused_with_the_rules_words(cap):
    assert suite_problems(cap) == [the_rules_words(cap)]


def test_a_suite_cap_is_the_rules_decimal():
    suite = parse_suite(SUITE.format(cap="0.00005").encode(), filename="capped.yaml")

    assert suite.cap_usd == Decimal("0.000050") == parse_cap("0.00005")


JUDGED = """suite: floored
version: 1
models: [fake/small, fake/large]
judge:
  model: fake/judge
  calibration: {on_below_floor: fail}
tasks:
  - id: one
    prompt: hi
    cases: [{id: a}]
"""


@pytest.mark.django_db
def test_the_suite_page_names_the_default_floor_when_the_suite_names_none():
    make_suite_version(JUDGED)
    client = Client()
    client.force_login(make_user())

    page = client.get(reverse("suite_detail", args=["floored"])).content.decode()

    assert "floor kappa 0.40 over 10 labels" in page
