"""Compare, for two runs that cannot be compared: the page says why and lists no cases
(a case list under "Not comparable" reads as a comparison)."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse

from tests.helpers.factories import make_run, make_user
from tests.helpers.report import make_report


class NotComparableTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.member = make_user()
        cls.a = make_run(status="done", report=make_report())
        other = {"suite": {"name": "other", "hash": "ab" * 32}}
        cls.b = make_run(status="done", report=make_report(**other))
        cls.c = make_run(status="done", report=make_report())

    def setUp(self):
        self.client.force_login(self.member)

    def _page(self, a, b) -> str:
        return self.client.get(reverse("compare"), {"a": a.id, "b": b.id}).content.decode()

    def test_runs_of_different_suites_say_why_and_list_no_cases(self):
        page = self._page(self.a, self.b)
        assert "Not comparable: different suites: support-desk vs other" in page
        assert 'id="cases"' not in page and "No case changed" not in page

    def test_comparable_runs_still_list_their_cases(self):
        page = self._page(self.a, self.c)
        assert "Not comparable" not in page and 'id="cases"' in page
