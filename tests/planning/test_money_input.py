"""Oversized money at every edge (issue 13 item 4): a clear message, never a stuck run or a
page that 500s for everyone."""

from __future__ import annotations

import pytest
from django.test import Client

from evalsite.core.money import MoneyError, parse_cap, parse_rate
from tests.helpers.cli import evalsite

DEMO = "examples/support-desk.yaml"


@pytest.mark.parametrize(
    ("given", "fragment"),
    [
        ("1000000", "over the largest cap, $100000"),
        ("1e400", "over the largest cap"),
        ("-1", "positive"),
        ("0", "positive"),
        ("NaN", "finite"),
        ("Infinity", "finite"),
        ("1" * 5000, "not a usable number"),
        ("two dollars", "not a number of USD"),
        ("0.0000001", "more than 6 decimal places"),
    ],
)
def test_a_cap_outside_its_bounds_is_refused_with_the_reason(given, fragment):
    with pytest.raises(MoneyError, match=fragment.replace("$", r"\$")):
        parse_cap(given, what="--max-cost")


def test_caps_and_rates_in_bounds_come_back_exact():
    assert str(parse_cap("0.05")) == "0.050000" and str(parse_cap(100000)) == "100000.000000"
    assert str(parse_rate("0")) == "0.000000" and str(parse_rate(15)) == "15.000000"


@pytest.mark.parametrize("cap", ["1000000", "1e400"])
def test_run_with_an_oversized_cap_exits_2_and_stores_no_run(tmp_path, cap):
    result = evalsite(tmp_path, "run", DEMO, "--fake", "--max-cost", cap)
    assert result.returncode == 2, result.stderr
    assert "--max-cost" in result.stderr and "Traceback" not in result.stderr
    listed = evalsite(tmp_path, "report", "latest")
    assert listed.returncode == 2 and "no run with a report" in listed.stderr


def test_prices_import_with_an_oversized_rate_exits_2_and_changes_nothing(tmp_path):
    sheet = tmp_path / "prices.yaml"
    sheet.write_text(
        "pinned: 2026-12-01\ncurrency: USD\nverified: true\n"
        "models:\n  - {model: fake/small, input_per_mtok: 1e400, output_per_mtok: 1}\n"
    )
    result = evalsite(tmp_path, "prices", "import", str(sheet), "--activate")
    assert result.returncode == 2 and "is over $100000" in result.stderr
    assert "Traceback" not in result.stderr
    assert evalsite(tmp_path, "prices").returncode == 0


@pytest.mark.django_db
def test_the_new_run_form_refuses_an_oversized_cap_on_the_page():
    from runs.models import PriceTable
    from tests.helpers.factories import make_suite_version, make_user

    PriceTable.objects.ensure_default()
    version = make_suite_version()
    client = Client()
    client.force_login(make_user())
    page = client.post(
        f"/suites/{version.suite.name}/{version.sha256}/runs/",
        {"pick_0": "on", "pick_1": "on", "fake": "on", "max_cost": "1e400"},
    )
    assert page.status_code == 400
    assert "the cap $1e400 is over the largest cap, $100000" in page.content.decode()
    assert client.get("/").status_code == 200


@pytest.mark.parametrize("given", [1e400, float("nan"), "1" * 5000, 0.0000001])
def test_an_mcp_cap_outside_its_bounds_is_a_structured_refusal(given):
    from evalsite.mcp.tools import Refused, requested_cap

    with pytest.raises(Refused) as refused:
        requested_cap(given)
    assert refused.value.reply["reason"] == "invalid_argument"
