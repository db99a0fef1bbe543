"""The suite page's "Across runs" card (its runs over time, the cost-vs-quality scatter,
the table of figures, what is not plotted) and its paged cases."""

from __future__ import annotations

import html
from unittest import mock

from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evalsite.core.report.across import run_points
from evalsite.core.report.matrix import matrix_report
from runs.models import Run
from runs.results.across import across_runs
from tests.helpers.factories import make_run, make_suite_version, make_user
from tests.helpers.report import CANDIDATE, CONCISE, make_report


def _many_cases(n: int, name: str = "many") -> str:
    cases = "\n".join(f"      - id: c{i:03d}\n        vars: {{q: question {i}}}" for i in range(n))
    return f"""suite: {name}
version: 1
models: [fake/small, fake/large]
tasks:
  - id: ask
    prompt: "{{{{q}}}}"
    cases:
{cases}
"""


class AcrossRunsCardTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.member = make_user()
        cls.version = make_suite_version()
        unpriced = make_report("eligible")
        unpriced |= matrix_report(unpriced, unpriced=[CANDIDATE, CONCISE])
        make_run(suite_version=cls.version, status="done", label="first",
                 report=make_report("eligible"))  # fmt: skip
        make_run(suite_version=cls.version, status="done", label="second", report=unpriced)
        make_run(suite_version=cls.version, status="running", label="going")

    def setUp(self):
        self.client.force_login(self.member)

    def _page(self, **query) -> str:
        url = reverse("suite_detail", args=[self.version.suite.name])
        return self.client.get(url, query).content.decode()

    def test_the_card_has_both_charts_titled_and_the_figures_as_a_table(self):
        page = self._page()
        card = page[page.index('id="across-runs"') :]
        card = card[: card.index("</section>")]
        titles = html.unescape(card)
        assert "<title>The suite's runs over time: win-rate</title>" in titles
        assert "<title>Cost against win-rate across runs</title>" in titles
        table = card[card.index('id="across-table"') :]
        assert table.count("<tr>") == 1 + 4  # the head, two candidates in each finished run
        assert "first" in table and "second" in table and "going" not in table
        assert "unpriced" in table

    def test_the_parts_of_the_reports_read_give_the_points_the_whole_reports_give(self):
        runs = Run.objects.for_suite(self.version.suite).filter(report__isnull=False)
        whole = [
            point
            for run in runs.order_by("created_at")
            for point in run_points(run.label, f"{run.created_at:%Y-%m-%d %H:%M}", run.report)
        ]
        across = across_runs(self.version.suite)
        assert across is not None and across.points == whole
        assert all(point.eligible for point in whole)  # a JSON true, read back as True

    def test_unpriced_points_are_said_not_plotted(self):
        page = self._page()
        assert "2 points unpriced, not plotted on the cost axis" in page
        assert "1 run unpriced, not plotted on the run cost" in page

    def test_the_estimate_fragment_gathers_no_runs_and_no_cases(self):
        url = reverse("run_estimate", args=[self.version.suite.name, self.version.sha256])
        unused = AssertionError("gathered for a fragment that does not show it")
        with (
            mock.patch("runs.views.suites.across_runs", side_effect=unused),
            mock.patch("runs.views.suites._case_page", side_effect=unused),
        ):
            response = self.client.post(
                url, {"pick_0": "on", "pick_1": "on"}, HTTP_HX_REQUEST="true"
            )
        assert response.status_code == 200 and 'id="run-estimate"' in response.content.decode()

    def test_a_suite_without_a_finished_run_says_so(self):
        other = make_suite_version(_many_cases(3, name="unrun"))
        url = reverse("suite_detail", args=[other.suite.name])
        page = self.client.get(url).content.decode()
        assert "No run of this suite has a report yet" in page


class PagedCasesTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.member = make_user()
        cls.version = make_suite_version(_many_cases(120))

    def setUp(self):
        self.client.force_login(self.member)
        self.url = reverse("suite_detail", args=[self.version.suite.name])

    def _cases(self, **query) -> str:
        page = self.client.get(self.url, query).content.decode()
        section = page[page.index('<section class="card" id="cases">') :]
        return section[: section.index("</section>")]

    def test_the_first_page_shows_fifty_cases_and_links_the_next(self):
        cases = self._cases()
        assert cases.count("<code>c0") == 50
        assert "<code>c049</code>" in cases and "<code>c050</code>" not in cases
        assert "page 1 of 3 · 120 cases" in cases and 'href="?page=2#cases"' in cases

    def test_a_later_page_shows_its_cases_only(self):
        cases = self._cases(page="3")
        assert cases.count("<code>c1") == 20 and "<code>c100</code>" in cases
        assert "<code>c049</code>" not in cases and 'href="?page=2#cases"' in cases

    def test_a_page_that_is_not_a_number_or_past_the_end_is_a_page_not_an_error(self):
        assert "page 1 of 3" in self._cases(page="x")
        assert "page 3 of 3" in self._cases(page="99")

    def test_the_version_chosen_stays_in_the_page_links(self):
        cases = self._cases(version=self.version.short_hash)
        assert f'href="?version={self.version.short_hash}&amp;page=2#cases"' in cases

    def test_the_page_is_a_bounded_number_of_queries(self):
        with CaptureQueriesContext(connection) as queries:
            self._cases()
        assert len(queries) < 30
