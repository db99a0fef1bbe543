"""The admin's price console over a frozen table and a bad rate: a frozen table opens as a
page to read (no Save buttons), and a negative rate is a message beside its field, never the
database constraint's name."""

from __future__ import annotations

from decimal import Decimal

from django.test import TestCase
from django.urls import reverse

from runs.models import Price
from tests.helpers.factories import make_price_table, make_run, make_user


class FrozenTableAdminTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.staff = make_user(is_staff=True, is_superuser=True)

    def setUp(self):
        self.client.force_login(self.staff)

    def test_a_frozen_table_opens_without_save_buttons(self):
        table = make_price_table()
        make_run(price_table=table)
        page = self.client.get(reverse("admin:runs_pricetable_change", args=[table.pk]))
        assert page.status_code == 200
        html = page.content.decode()
        assert 'name="_save"' not in html and 'name="_continue"' not in html

    def test_a_frozen_tables_price_row_opens_without_save_buttons(self):
        table = make_price_table()
        make_run(price_table=table)
        price = Price.objects.filter(table=table).first()
        page = self.client.get(reverse("admin:runs_price_change", args=[price.pk]))
        assert page.status_code == 200
        assert 'name="_save"' not in page.content.decode()

    def test_an_unfrozen_table_still_opens_with_save_buttons(self):
        table = make_price_table()
        page = self.client.get(reverse("admin:runs_pricetable_change", args=[table.pk]))
        assert 'name="_save"' in page.content.decode()

    def test_a_negative_rate_is_a_message_beside_its_field(self):
        table = make_price_table()
        price = Price.objects.filter(table=table).first()
        url = reverse("admin:runs_price_change", args=[price.pk])
        data = {"table": table.pk, "model": price.model, "input_per_mtok": "-1",
                "output_per_mtok": "1", "cached_input_per_mtok": "", "source_url": "",
                "read_on": "", "_save": "Save"}  # fmt: skip
        response = self.client.post(url, data)
        html = response.content.decode()
        assert response.status_code == 200
        assert "price_non_negative" not in html and "is violated" not in html
        field = html[html.index("field-input_per_mtok") :][:2000]
        assert "errorlist" in field
        assert Price.objects.get(pk=price.pk).input_per_mtok != Decimal("-1")
