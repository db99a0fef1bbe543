"""The answers browser (/runs/<id>/answers/) and its CSV: text and RE2 search (a bad pattern
is a message beside the field, never a 500), the failures-only and differs-between-
contestants views, the sorts, each answer whole (and as indented JSON) with links to its
pairs and its case, and the CSV of exactly the filtered view, in the CLI's columns."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Answer, Run
from runs.results.exports import ANSWER_COLUMNS
from tests.helpers.factories import make_answer, make_pair, make_run, make_user

HTMX = {"HTTP_HX_REQUEST": "true"}
pytestmark = pytest.mark.django_db
LONG = "The refund policy says " + "thirty days " * 60 + "END-OF-ANSWER"


@pytest.fixture
def member() -> Client:
    client = Client()
    client.force_login(make_user())
    return client


@pytest.fixture
def run() -> Run:
    """Two contestants over three cases: they agree on `same` (both pass), differ on `split`
    (small fails), and on `long` large's answer is long prose and small's is JSON."""
    run = make_run(status=Run.Status.DONE)
    small, large = run.contestants
    for contestant in (small, large):
        make_answer(run, "t", "same", contestant, passed=True, text=f"{contestant} fine",
                    cost_usd=Decimal("0.001"), latency_ms=100)  # fmt: skip
    make_answer(run, "t", "split", small, passed=False, text="wrong: refund in 90 days",
                cost_usd=Decimal("0.003"), latency_ms=900)  # fmt: skip
    make_answer(run, "t", "split", large, passed=True, text="right: refund in 30 days",
                cost_usd=Decimal("0.002"), latency_ms=50)  # fmt: skip
    make_answer(run, "t", "long", small, passed=True, text='{"refund": true, "days": 30}')
    make_answer(run, "t", "long", large, passed=True, text=LONG)
    return run


def _page(member: Client, run: Run, **query: str) -> str:
    response = member.get(reverse("answer_list", args=[run.id]), query, **HTMX)
    assert response.status_code == 200
    return response.content.decode()


def _cases(html: str) -> list[str]:
    """The task/case of each row, in the page's order."""
    return [part.split("</code>")[0] for part in html.split('<tr class="answer-row">\n        <td><code>')[1:]]  # fmt: skip


def test_a_long_answer_is_whole_in_place_behind_its_clip(member, run):
    html = _page(member, run, case="long", contestant=run.contestants[1])

    assert "END-OF-ANSWER" in html  # the whole text is on the page, in the <details>
    assert '<details class="answer-full">' in html
    assert f"show all {len(LONG)} characters" in html


def test_an_answer_that_is_json_is_shown_indented(member, run):
    html = _page(member, run, case="long", contestant=run.contestants[0])

    assert "show as JSON" in html
    assert "{\n  &quot;refund&quot;: true,\n  &quot;days&quot;: 30\n}" in html


def test_each_answer_links_to_its_pairs_and_its_case(member, run):
    paired = make_run(status=Run.Status.DONE)
    pair = make_pair(paired, "t", "one")

    html = _page(member, paired, contestant=paired.contestants[1])

    assert reverse("pair_detail", args=[paired.id, pair.pk]) in html
    assert "?task=t&amp;case=one" in html
    case_page = _page(member, paired, task="t", case="one")
    assert "2 answers" in case_page


def test_text_search_ignores_case_and_finds_the_answers_holding_it(member, run):
    html = _page(member, run, q="REFUND IN")

    assert sorted(_cases(html)) == ["t/split", "t/split"]


def test_regex_search_is_re2_and_a_bad_pattern_is_a_message_not_a_500(member, run):
    found = _page(member, run, q=r"refund in \d0 days", regex="1")
    bad = _page(member, run, q=r"(?<=refund)x", regex="1")

    assert sorted(_cases(found)) == ["t/split", "t/split"]
    assert 'id="search-error"' in bad and "invalid regular expression" in bad
    assert "look-around" in bad and 'hx-swap-oob="true"' in bad
    whole = member.get(reverse("answer_list", args=[run.id]), {"q": "(", "regex": "1"})
    assert whole.status_code == 200 and "invalid regular expression" in whole.content.decode()


def test_failures_only_and_differs_between_contestants(member, run):
    failures = _page(member, run, view="failures")
    differing = _page(member, run, view="differing")

    assert _cases(failures) == ["t/split"]
    assert sorted(_cases(differing)) == ["t/split", "t/split"]


def test_a_case_of_a_single_contestant_never_differs(member):
    run = make_run(status=Run.Status.DONE, contestants=["fake/small"])
    make_answer(run, "t", "one", "fake/small", passed=False)

    assert _cases(_page(member, run, view="differing")) == []


def test_sorts_by_cost_latency_length_and_score(member, run):
    assert _cases(_page(member, run, sort="-cost"))[:2] == ["t/split", "t/split"]
    assert _cases(_page(member, run, sort="latency"))[0] == "t/split"  # 50 ms
    assert _cases(_page(member, run, sort="-length"))[0] == "t/long"
    assert _cases(_page(member, run, sort="score"))[0] == "t/split"  # the one failure


def _csv(member: Client, run: Run, **query: str) -> list[list[str]]:
    response = member.get(reverse("answer_csv", args=[run.id]), query)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith("attachment")
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def test_the_csv_is_the_filtered_view_in_the_clis_columns(member, run):
    rows = _csv(member, run, view="failures")
    everything = _csv(member, run)

    assert tuple(rows[0]) == ANSWER_COLUMNS
    assert [(row[1], row[2]) for row in rows[1:]] == [("split", run.contestants[0])]
    assert len(everything) == 1 + Answer.objects.filter(run=run).count()


def test_the_page_links_its_csv_with_the_same_query(member, run):
    html = _page(member, run, view="failures", q="refund")

    assert reverse("answer_csv", args=[run.id]) + "?view=failures&amp;q=refund" in html


def test_the_csv_of_a_bad_pattern_says_why(member, run):
    response = member.get(reverse("answer_csv", args=[run.id]), {"q": "(", "regex": "1"})

    assert response.status_code == 400
    assert "invalid regular expression" in response.content.decode()


def test_the_page_costs_the_same_queries_for_few_and_many_answers(
    member, django_assert_max_num_queries
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    few, many = make_run(status=Run.Status.DONE), make_run(status=Run.Status.DONE)
    make_pair(few, "t", "c0")
    for n in range(30):
        make_pair(many, "t", f"c{n}")
    counts = []
    for shown in (few, many):
        # once untimed: the first page of a suite version reads its parse, kept per process
        # (on SQLite an earlier test's version may share the key; PostgreSQL's ids do not)
        _page(member, shown, sort="-length", q="c")
        with CaptureQueriesContext(connection) as queries:
            _page(member, shown, sort="-length", q="c")
        counts.append(len(queries))
    assert counts[0] == counts[1]
