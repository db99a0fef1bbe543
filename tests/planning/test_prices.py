from datetime import date
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import IntegrityError
from django.test import TestCase

from evalsite.core.pricing import PriceRows, parse_price_yaml
from runs.models import FrozenPriceTable, Price, PriceTable
from runs.models.pricing import default_sheet
from tests.helpers.factories import make_price_table, make_run

SAMPLE = Path(__file__).parents[1] / "fixtures" / "prices-sample.yaml"


class DefaultTableTests(TestCase):
    def test_the_shipped_table_loads_once_and_becomes_active(self):
        table = PriceTable.objects.ensure_default()
        assert table is not None and table.active
        assert PriceTable.objects.ensure_default() is None
        assert PriceTable.objects.count() == 1

    def test_the_shipped_table_prices_every_provider_and_the_fake_models(self):
        providers = {row.provider for row in default_sheet().rows}
        assert {"anthropic", "openai", "google", "fake"} <= providers

    def test_the_shipped_table_has_a_pinned_date_and_a_source_for_every_row(self):
        sheet = default_sheet()
        assert sheet.pinned.year >= 2026
        assert all(row.source for row in sheet.rows if row.provider != "fake")

    def test_the_shipped_table_prices_older_models_and_their_dated_snapshots(self):
        rows = PriceRows(default_sheet().rows)
        assert rows["openai/gpt-3.5-turbo"].output_per_mtok == Decimal("1.50")
        assert rows["openai/gpt-4-turbo-2024-04-09"].model == "openai/gpt-4-turbo"
        assert rows["anthropic/claude-sonnet-4-20250514"].model == "anthropic/claude-sonnet-4"
        assert rows["anthropic/claude-3-5-haiku-latest"].cached_input_per_mtok == Decimal("0.08")
        added = [row for row in default_sheet().rows if row.read_on == date(2026, 12, 4)]
        assert len(added) == 11 and all(row.source.startswith("https://") for row in added)

    def test_the_shipped_table_leaves_out_what_no_provider_page_confirmed(self):
        rows = PriceRows(default_sheet().rows)
        for model in ("anthropic/claude-3-5-sonnet-20241022", "openai/o1", "openai/o3-mini"):
            assert model not in rows


class ActiveTableTests(TestCase):
    def test_marking_a_table_active_deactivates_the_other(self):
        first = make_price_table(active=True)
        second = make_price_table()
        second.mark_active()
        first.refresh_from_db()
        assert not first.active and second.active
        assert PriceTable.objects.active() == second

    def test_the_database_refuses_two_active_tables(self):
        make_price_table(active=True)
        with pytest.raises(IntegrityError):
            make_price_table(active=True)


class FrozenTableTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.table = make_price_table()
        make_run(price_table=cls.table)

    def test_a_table_used_by_a_run_is_frozen(self):
        assert self.table.is_frozen
        assert not make_price_table().is_frozen

    def test_changing_a_price_of_a_frozen_table_is_refused(self):
        price = self.table.prices.get(model="fake/small")
        price.input_per_mtok = Decimal("9")
        with pytest.raises(FrozenPriceTable):
            price.save()
        price.refresh_from_db()
        assert price.input_per_mtok == Decimal("0.10")

    def test_adding_or_deleting_a_row_of_a_frozen_table_is_refused(self):
        with pytest.raises(FrozenPriceTable):
            Price.objects.create(table=self.table, model="x/y", input_per_mtok=1, output_per_mtok=1)
        with pytest.raises(FrozenPriceTable):
            self.table.prices.first().delete()

    def test_editing_or_deleting_the_frozen_table_itself_is_refused(self):
        self.table.pinned = self.table.pinned.replace(year=2020)
        with pytest.raises(FrozenPriceTable):
            self.table.save()
        with pytest.raises(FrozenPriceTable):
            PriceTable.objects.get(pk=self.table.pk).delete()

    def test_a_frozen_table_can_still_be_marked_active(self):
        table = PriceTable.objects.get(pk=self.table.pk)
        table.mark_active()
        assert PriceTable.objects.active() == table

    def test_duplicating_a_frozen_table_gives_an_editable_unverified_copy(self):
        copy = self.table.duplicate()
        assert copy.pk != self.table.pk and not copy.is_frozen and not copy.verified
        assert {p.model for p in copy.prices.all()} == {"fake/small", "fake/large"}
        price = copy.prices.get(model="fake/small")
        price.input_per_mtok = Decimal("0.2")
        price.save()


class ImportExportTests(TestCase):
    def test_import_then_export_round_trips_a_price_file(self):
        table = PriceTable.objects.import_text(SAMPLE.read_text())
        assert table.name == "prices-2026-10-01" and not table.active
        assert parse_price_yaml(table.export_yaml()) == parse_price_yaml(SAMPLE.read_text())

    def test_cli_import_activate_then_export(self):
        out = StringIO()
        call_command("prices", "import", str(SAMPLE), "--activate", stdout=out)
        assert "imported prices-2026-10-01: 3 models (active)" in out.getvalue()
        target = Path(self.enterContext(_tmpdir())) / "out.yaml"
        call_command("prices", "export", str(target), stdout=StringIO())
        assert parse_price_yaml(target.read_text()) == parse_price_yaml(SAMPLE.read_text())

    def test_cli_import_of_a_bad_file_exits_2_naming_the_field(self):
        bad = Path(self.enterContext(_tmpdir())) / "bad.yaml"
        bad.write_text(
            "pinned: 2026-01-01\nmodels: [{model: a/b, input_per_mtok: x, output_per_mtok: 1}]"
        )
        err = StringIO()
        with pytest.raises(SystemExit) as exit_:
            call_command("prices", "import", str(bad), stderr=err)
        assert exit_.value.code == 2
        assert "models[0].input_per_mtok" in err.getvalue()
        assert PriceTable.objects.count() == 1  # only the default table


def _tmpdir():
    import tempfile

    return tempfile.TemporaryDirectory()


@pytest.mark.django_db
def test_cli_imports_evalmines_row_fields_and_says_what_it_did_not_store(tmp_path):
    from tests.core.test_pricing import EVALMINE_ROWS

    path = tmp_path / "prices-2026-08-29.yaml"
    path.write_text(EVALMINE_ROWS)
    out, err = StringIO(), StringIO()
    call_command("prices", "import", str(path), "--activate", stdout=out, stderr=err)
    assert "imported prices-2026-08-29: 2 models (active)" in out.getvalue()
    notes = err.getvalue().splitlines()
    assert f"note: {path}: models[0].cache_write_5m_per_mtok: not stored: " in notes[0]
    assert any("models[1].verified: false (openai/gpt-x)" in line for line in notes)
    table = PriceTable.objects.get(name="prices-2026-08-29")
    assert table.active and not table.verified
    assert "openai/gpt-x: Peak hours cost double." in table.notes
    assert table.prices.get(model="openai/gpt-x").source_url == "https://example.com/openai-pricing"


@pytest.mark.django_db
def test_cli_import_names_every_problem_of_a_price_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "pinned: 2026-01-01\nmodels:\n"
        "  - {model: a/b, input_per_mtok: x, output_per_mtok: 1, verified: sure}\n"
        "  - {model: a/c, input_per_mtok: 1, output_per_mtk: 1}\n"
    )
    err = StringIO()
    with pytest.raises(SystemExit) as exit_:
        call_command("prices", "import", str(bad), stderr=err)
    assert exit_.value.code == 2
    lines = err.getvalue().splitlines()
    assert [line.split(": ")[2] for line in lines] == [
        "models[0].input_per_mtok",
        "models[0].verified",
        "models[1].output_per_mtk",
        "models[1].output_per_mtok",
    ], lines
