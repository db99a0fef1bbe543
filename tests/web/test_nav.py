"""The main navigation marks exactly the page's section (issue 15: /label/ marked both "Label"
and "Judge lab"), and runs and labels are read-only in the admin while prices stay editable."""

from __future__ import annotations

import re

import pytest
from django.test import Client, TestCase
from django.urls import reverse

from evalsite.navigation import section_of
from runs.models import Label, Run
from tests.helpers.factories import (
    make_label,
    make_pair,
    make_price_table,
    make_run,
    make_suite_version,
    make_user,
)

ACTIVE = re.compile(r'<a href="([^"]*)" aria-current="page">([^<]*)</a>')


@pytest.mark.parametrize(
    ("path", "section"),
    [
        ("/", "Dashboard"),
        ("/suites/", "Suites"),
        ("/suites/tiny/calibration/", "Suites"),
        ("/runs/20261130T000000Z_x/pairs/3/", "Suites"),
        ("/label/", "Label"),
        ("/label/tiny/mine/", "Label"),
        ("/lab/", "Judge lab"),
        ("/lab/some-set/", "Judge lab"),
        ("/compare/", "Compare"),
        ("/decisions/", "Decisions"),
        ("/prices/", "Prices"),
        ("/login/", None),
        ("/labels/", None),
    ],
)
def test_the_first_path_segment_names_the_section(path, section):
    found = section_of(path)
    assert (found.label if found else None) == section


class NavTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.user = make_user()
        cls.version = make_suite_version()

    def setUp(self):
        self.client.force_login(self.user)

    def _active(self, url: str) -> list[tuple[str, str]]:
        response = self.client.get(url)
        assert response.status_code == 200, url
        return ACTIVE.findall(response.content.decode())

    def test_each_page_marks_one_section_with_aria_current(self):
        name = self.version.suite.name
        pages = {
            "/": "Dashboard",
            "/label/": "Label",
            "/lab/": "Judge lab",
            f"/suites/{name}/": "Suites",
            f"/suites/{name}/calibration/": "Suites",
            "/decisions/": "Decisions",
            "/prices/": "Prices",
        }
        for url, section in pages.items():
            with self.subTest(url=url):
                assert [label for _, label in self._active(url)] == [section]

    def test_the_active_link_points_at_its_sections_page(self):
        assert self._active("/label/") == [(reverse("label_home"), "Label")]
        assert self._active("/lab/") == [(reverse("lab_list"), "Judge lab")]


class ReadOnlyAdminTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.stored_run = make_run(label="kept")
        cls.label = make_label(make_pair(cls.stored_run, "greet", "one"), note="as said")
        cls.table = make_price_table()

    def setUp(self):
        self.client = Client()
        self.client.force_login(make_user(is_staff=True, is_superuser=True))

    def _urls(self, obj) -> dict[str, str]:
        meta = obj._meta
        prefix = f"admin:{meta.app_label}_{meta.model_name}"
        return {
            "list": reverse(f"{prefix}_changelist"),
            "change": reverse(f"{prefix}_change", args=[obj.pk]),
            "add": reverse(f"{prefix}_add"),
            "delete": reverse(f"{prefix}_delete", args=[obj.pk]),
        }

    def test_staff_list_and_open_runs_and_labels_without_a_save_button(self):
        shown = [
            (self.stored_run, self.stored_run.id, "kept"),
            (self.label, self.label.labeller_name, "as said"),
        ]
        for obj, listed, field in shown:
            urls = self._urls(obj)
            with self.subTest(model=obj._meta.model_name):
                listing = self.client.get(urls["list"])
                change = self.client.get(urls["change"])
                assert listing.status_code == 200 and listed in listing.content.decode()
                assert change.status_code == 200 and field in change.content.decode()
                assert 'name="_save"' not in change.content.decode()
                assert "Delete" not in change.content.decode()

    def test_changing_adding_and_deleting_runs_and_labels_is_refused(self):
        for obj in (self.stored_run, self.label):
            urls = self._urls(obj)
            with self.subTest(model=obj._meta.model_name):
                assert self.client.post(urls["change"], {"label": "changed"}).status_code == 403
                assert self.client.get(urls["add"]).status_code == 403
                assert self.client.post(urls["add"], {}).status_code == 403
                assert self.client.get(urls["delete"]).status_code == 403
                assert self.client.post(urls["delete"], {"post": "yes"}).status_code == 403
        assert Run.objects.get(pk=self.stored_run.pk).label == "kept"
        assert Label.objects.filter(pk=self.label.pk, note="as said").exists()

    def test_the_changelist_offers_no_bulk_delete(self):
        for obj in (self.stored_run, self.label):
            page = self.client.get(self._urls(obj)["list"]).content.decode()
            assert "delete_selected" not in page

    def test_price_tables_stay_editable(self):
        change = self.client.get(reverse("admin:runs_pricetable_change", args=[self.table.pk]))
        assert change.status_code == 200 and 'name="_save"' in change.content.decode()
        assert self.client.get(reverse("admin:runs_price_add")).status_code == 200
