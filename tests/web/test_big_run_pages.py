"""What the pages read of what grows with a run: the stored report (megabytes of JSON on a
100,000-pair run) and the suite's document are not read on each request of a done run's
pages, the answers and pairs browsers count a done run's rows once a process, and the
figures shown are still the stored report's (docs/performance.md, "Pages on a 100,000-pair
run")."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evalsite.core.report.html import render_sections
from runs.models import Answer, Pair, Run
from tests.engine.test_judging import _run
from tests.helpers.factories import make_user
from tests.helpers.labelling import member_client

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(tmp_path) -> Run:
    return _run(tmp_path)


@pytest.fixture
def member() -> Client:
    return member_client(make_user(username="member"))


def _selecting(queries: list[dict], table: str, column: str) -> list[str]:
    """The statements that read `table`.`column` whole, as a selected column (a JSON key
    read inside a function does not count)."""
    column_read = re.compile(rf'(?:SELECT|,)\s+"{table}"\."{column}"\s*(?:,|\sFROM\s)')
    return [query["sql"] for query in queries if column_read.search(query["sql"])]


def _again(client: Client, url: str) -> tuple[str, list[dict]]:
    """The page and its queries the second time this process serves it: the first may read
    and keep what a done run no longer changes."""
    assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode(), queries.captured_queries


def test_a_done_runs_page_shows_its_stored_report_without_reading_it_again(run, member):
    report = Run.objects.get(pk=run.pk).report
    page, queries = _again(member, reverse("run_detail", args=[run.id]))

    assert _selecting(queries, "runs_run", "report") == []
    totals = report["totals"]
    assert f"{totals['answers']} answers, {totals['judge_calls']} judge calls" in page
    nav, sections = render_sections(report)
    assert sections in page and nav in page


def test_a_runs_pages_read_neither_its_report_nor_its_suites_document(run, member):
    pair = Pair.objects.filter(run=run).first()
    for url in (
        reverse("run_detail", args=[run.id]),
        reverse("answer_list", args=[run.id]),
        reverse("pair_list", args=[run.id]),
        reverse("pair_detail", args=[run.id, pair.pk]),
    ):
        _, queries = _again(member, url)
        assert _selecting(queries, "runs_run", "report") == [], url
        for column in ("parsed", "yaml_text"):
            assert _selecting(queries, "runs_suiteversion", column) == [], (url, column)


def test_lists_of_runs_show_a_done_runs_headline_without_reading_its_report(run, member):
    for url in (reverse("dashboard"), reverse("suite_detail", args=[run.suite.name])):
        page, queries = _again(member, url)
        assert _selecting(queries, "runs_run", "report") == [], url
        assert Run.objects.get(pk=run.pk).headline in page


def test_the_suite_page_reads_no_report_key_and_no_document_after_its_first_request(run, member):
    # SQLite reads a key of a JSON column by parsing the whole of it: the Across card's
    # eight keys of a 7 MB report took 194 ms a request
    page, queries = _again(member, reverse("suite_detail", args=[run.suite.name]))
    key_read = re.compile(r"""("runs_run"\."report", '\$|"runs_run"\."report" ->)""")
    assert [q["sql"] for q in queries if key_read.search(q["sql"])] == []
    for column in ("parsed", "yaml_text"):
        assert _selecting(queries, "runs_suiteversion", column) == [], column
    assert 'id="across-runs"' in page and "No run of this suite has a report yet" not in page


def test_the_browsers_count_a_done_runs_rows_once_and_a_filtered_list_each_time(run, member):
    answers, pairs = Answer.objects.filter(run=run).count(), Pair.objects.filter(run=run).count()
    for url, shown in (
        (reverse("answer_list", args=[run.id]), f"{answers} answers"),
        (reverse("pair_list", args=[run.id]), f"{pairs} pairs"),
    ):
        page, queries = _again(member, url)
        assert shown in page
        assert not [q for q in queries if "COUNT(" in q["sql"]], url

    url = reverse("answer_list", args=[run.id]) + "?verdict=passed"
    page, queries = _again(member, url)
    passed = Answer.objects.filter(run=run, passed=True).count()
    assert f"{passed} answers" in page and [q for q in queries if "COUNT(" in q["sql"]]
