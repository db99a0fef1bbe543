"""numbers.money prints a report's float and a row's Decimal (MoneyField) alike."""

from __future__ import annotations

from decimal import Decimal

from evalsite.core.report import numbers as num


def test_a_decimal_and_a_float_of_the_same_amount_print_alike():
    for amount in ("0", "1.5", "0.005", "-0.25", "12.3456"):
        assert num.money(Decimal(amount)) == num.money(float(amount))


def test_a_decimal_below_a_cent_keeps_six_places():
    assert num.money(Decimal("0.000123")) == "$0.000123"
    assert num.money(Decimal("-0.000123")) == "-$0.000123"


def test_fixed_places_and_a_missing_amount():
    assert num.money(Decimal("0.000123"), digits=4) == "$0.0001"
    assert num.money(None) == "n/a"
