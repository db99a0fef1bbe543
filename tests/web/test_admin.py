from decimal import Decimal
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase
from django.urls import reverse

from evalsite.core.pricing import parse_price_yaml
from runs.models import Price, PriceTable
from tests.helpers.factories import make_price_table, make_run, make_user

SAMPLE = Path(__file__).parents[1] / "fixtures" / "prices-sample.yaml"


def changelist_post(prices, **changes):
    """The POST the admin's list-editable price changelist sends."""
    data = {
        "form-TOTAL_FORMS": str(len(prices)),
        "form-INITIAL_FORMS": str(len(prices)),
        "_save": "Save",
    }
    for i, price in enumerate(prices):
        data[f"form-{i}-id"] = str(price.pk)
        data[f"form-{i}-input_per_mtok"] = str(changes.get(price.model, price.input_per_mtok))
        data[f"form-{i}-output_per_mtok"] = str(price.output_per_mtok)
        data[f"form-{i}-cached_input_per_mtok"] = ""
        data[f"form-{i}-read_on"] = ""
    return data


class PriceConsoleTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.staff = make_user(is_staff=True, is_superuser=True)
        cls.member = make_user()

    def setUp(self):
        self.client.force_login(self.staff)

    def test_the_admin_edits_a_price_in_the_list(self):
        table = make_price_table()
        prices = list(Price.objects.filter(table=table).order_by("model"))
        url = reverse("admin:runs_price_changelist") + f"?table__id__exact={table.pk}"
        response = self.client.post(url, changelist_post(prices, **{"fake/small": "0.25"}))
        assert response.status_code == 302
        assert Price.objects.get(table=table, model="fake/small").input_per_mtok == Decimal("0.25")

    def test_a_frozen_tables_prices_are_not_editable_in_the_list(self):
        table = make_price_table()
        make_run(price_table=table)
        prices = list(Price.objects.filter(table=table).order_by("model"))
        url = reverse("admin:runs_price_changelist") + f"?table__id__exact={table.pk}"
        assert 'name="form-0-input_per_mtok"' not in self.client.get(url).content.decode()
        self.client.post(url, changelist_post(prices, **{"fake/small": "0.25"}))
        assert Price.objects.get(table=table, model="fake/small").input_per_mtok == Decimal("0.10")

    def test_a_frozen_table_change_page_is_read_only(self):
        table = make_price_table()
        make_run(price_table=table)
        response = self.client.get(reverse("admin:runs_pricetable_change", args=[table.pk]))
        assert response.status_code == 200
        assert 'name="pinned"' not in response.content.decode()

    def test_the_price_list_filters_by_provider_and_searches(self):
        make_price_table({"openai/gpt-4o": ("2.5", "10"), "google/gemini-2.5-pro": ("1.25", "10")})
        url = reverse("admin:runs_price_changelist")
        page = self.client.get(url, {"provider": "google"}).content.decode()
        assert "gemini-2.5-pro" in page and "gpt-4o" not in page
        page = self.client.get(url, {"q": "gpt"}).content.decode()
        assert "gpt-4o" in page and "gemini-2.5-pro" not in page

    def test_import_page_creates_a_table_and_export_action_round_trips_it(self):
        upload = SimpleUploadedFile("p.yaml", SAMPLE.read_bytes(), content_type="application/yaml")
        response = self.client.post(
            reverse("admin:runs_pricetable_import"), {"file": upload, "activate": "on"}
        )
        assert response.status_code == 302
        table = PriceTable.objects.get(name="prices-2026-10-01")
        assert table.active
        response = self.client.post(
            reverse("admin:runs_pricetable_changelist"),
            {"action": "export_yaml", "_selected_action": [table.pk]},
        )
        assert response["Content-Disposition"].endswith('prices-2026-10-01.yaml"')
        exported = parse_price_yaml(response.content.decode())
        assert exported == parse_price_yaml(SAMPLE.read_text())

    def test_import_of_a_bad_file_shows_the_error_and_creates_nothing(self):
        upload = SimpleUploadedFile("p.yaml", b"pinned: 2026-01-01\nmodels: []")
        response = self.client.post(reverse("admin:runs_pricetable_import"), {"file": upload})
        assert response.status_code == 200
        assert "non-empty list" in response.content.decode()
        assert not PriceTable.objects.exists()

    def test_mark_active_and_duplicate_actions(self):
        table = make_price_table()
        url = reverse("admin:runs_pricetable_changelist")
        self.client.post(url, {"action": "mark_active", "_selected_action": [table.pk]})
        assert PriceTable.objects.active() == table
        self.client.post(url, {"action": "duplicate_as_new_table", "_selected_action": [table.pk]})
        assert PriceTable.objects.count() == 2

    def test_members_cannot_reach_the_console(self):
        self.client.force_login(self.member)
        for name in [
            "admin:runs_price_changelist",
            "admin:runs_endpoint_changelist",
            "admin:runs_pricetable_import",
        ]:
            response = self.client.get(reverse(name))
            assert response.status_code == 302 and "/admin/login/" in response["Location"]
