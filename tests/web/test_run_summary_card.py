"""The run page opens with a summary card read from the stored report (the headline or why
there is none, win-rates beside schema-pass rates, the cost, the warnings grouped); says
"no labels yet" with a link to label instead of empty kappa figures; shows a status badge
that follows the run's phase; and takes a decision only on a finished run."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Decision, Judgement, Run
from runs.results.progress import progress
from tests.engine.test_judging import _run
from tests.helpers.factories import make_judged_run, make_run, make_user
from tests.helpers.report import CANDIDATE, CONCISE, make_report

HTMX = {"HTTP_HX_REQUEST": "true"}
pytestmark = pytest.mark.django_db


@pytest.fixture
def member():
    client = Client()
    client.force_login(make_user())
    return client


def _page(client: Client, run: Run) -> str:
    response = client.get(reverse("run_detail", args=[run.id]))
    assert response.status_code == 200
    return response.content.decode()


def _card(page: str) -> str:
    match = re.search(r'<section id="summary".*?</section>', page, re.S)
    assert match, "the page has no summary card"
    return match.group(0)


# --- the summary card -----------------------------------------------------------------------


def test_the_card_comes_first_with_the_headline_and_each_candidates_figures(member):
    run = make_run(status=Run.Status.DONE, report=make_report("eligible"))
    page = _page(member, run)
    card = _card(page)

    assert page.index('id="summary"') < page.index('id="run-details"')
    assert page.index('id="summary"') < page.index('<section id="calibration"')
    assert "Headline" in card and "UNCALIBRATED" not in card
    assert "Calibration gate: calibrated — " in card
    for name, rate, interval, flips, schema in (
        (CANDIDATE, "0.463", "[0.325, 0.613]", "3", "0.950 (n=40)"),
        (CONCISE, "0.575", "[0.400, 0.750]", "7", "0.900 (n=40)"),
    ):
        row = re.search(rf"<tr>\s*<td[^>]*><code>{re.escape(name)}</code>.*?</tr>", card, re.S)
        assert row, name
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
        assert rate in cells[2] and cells[3] == interval and cells[4] == "20", cells
        assert cells[5].startswith(flips) and cells[6] == schema, cells
    assert (
        "<strong>$0.0658</strong> this run" in card
        and "<strong>$0.0658</strong> if uncached" in card
    )
    assert "simulated" not in card


def test_an_uncalibrated_run_says_which_gate_refused_and_what_labels_would_do(member):
    run = make_run(status=Run.Status.DONE, report=make_report("uncalibrated"))
    card = _card(_page(member, run))

    assert "No headline: the win-rates are UNCALIBRATED" in card
    assert "Refused by the calibration gate: judge agreement below the floor — " in card
    assert "kappa 0.25 is below the floor 0.40" in card
    # the report's own labels_needed (23), not a figure the page worked out
    assert "Labels still needed: 23 more" in card and "12 labels so far" in card
    assert reverse("label_pair", args=[run.suite.name]) in card
    assert "0.463\u2020" in card


def test_a_fake_runs_cost_is_marked_simulated_and_a_cached_rerun_shows_its_uncached_cost(member):
    report = make_report("eligible")
    report["totals"] |= {"simulated": True, "cost_usd": 0.0, "cost_answers_usd": 0.0,
                         "cost_judge_usd": 0.0, "cache_hit_rate": 1.0}  # fmt: skip
    run = make_run(status=Run.Status.DONE, report=report)
    card = _card(_page(member, run))

    assert "<strong>$0.0000</strong> this run" in card
    assert "<strong>$0.0658</strong> if uncached" in card
    assert "simulated</span> fake provider" in card


def test_warnings_are_one_counted_block_with_the_tags_on_one_line(member):
    warnings = [
        "win-rates are UNCALIBRATED: kappa 0.25 is below the floor 0.40",
        *(f"{CANDIDATE}: tag t{i}: pass rate 0.{i}00 is below 0.70" for i in range(1, 6)),
        "the price table is UNVERIFIED",
    ]
    per_tag = [
        {
            "tag": f"t{i}",
            "contestants": {
                CANDIDATE: {"n": 10, "passed": i, "rate": i / 10, "flagged": True},
                CONCISE: {"n": 10, "passed": 9, "rate": 0.9, "flagged": False},
            },
            "win_rates": {},
        }
        for i in range(1, 6)
    ]
    report = make_report("uncalibrated", warnings=warnings, per_tag=per_tag)
    run = make_run(status=Run.Status.DONE, report=report)
    page = _page(member, run)
    card = _card(page)

    assert "<summary>7 warnings</summary>" in card
    assert (
        f"{CANDIDATE}: 5 tags pass below 0.70: t1 0.100, t2 0.200, t3 0.300, t4 0.400, t5 0.500"
        in card
    )
    assert card.count("<li>") == 3
    # and the report's own Warnings section groups them the same way
    section = re.search(r'<section id="warnings">.*?</section>', page, re.S).group(0)
    assert "7 warnings:" in section and section.count("<li>") == 3


def test_a_run_without_a_judge_shows_schema_pass_rates_and_no_win_rates(member):
    run = make_run(status=Run.Status.DONE, report=make_report("no_judge"), judge={})
    card = _card(_page(member, run))

    assert "No judge in this run: no win-rates" in card
    assert "<th>schema-pass rate</th>" in card and "0.950 (n=40)" in card
    assert "win-rate</th>" not in card


def test_a_stopped_runs_card_says_the_figures_cover_what_finished(member):
    report = make_report(
        "uncalibrated", status="cancelled", detail="cancelled; finished answers are kept"
    )
    run = make_run(status=Run.Status.CANCELLED, report=report)
    card = _card(_page(member, run))

    assert "cancelled; finished answers are kept" in card and "cover what finished" in card


def test_the_table_of_contents_links_every_section_of_the_page(member):
    run = make_run(status=Run.Status.DONE, report=make_report("uncalibrated"))
    page = _page(member, run)
    toc = re.search(r'<nav class="card toc".*?</nav>', page, re.S).group(0)

    for anchor in re.findall(r'href="#([^"]+)"', toc):
        assert f'id="{anchor}"' in page, anchor
    assert {"summary", "calibration", "win-rates", "charts", "decisions"} <= set(
        re.findall(r'href="#([^"]+)"', toc)
    )


# --- no labels --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_with_no_labels_the_page_says_so_and_links_to_label_instead_of_empty_figures(
    tmp_path, member
):
    run = _run(tmp_path)  # a judged run of a suite without labels
    page = _page(member, run)
    card = _card(page)
    calibration = re.search(r'<section id="calibration">.*?</section>', page, re.S).group(0)

    assert run.report["calibration"]["status"] == "no_labels"
    assert "No labels yet." in card
    assert f'href="{reverse("label_pair", args=[run.suite.name])}"' in card
    assert "No labels yet: the judge has not been compared with people" in calibration
    assert "Confusion matrix" not in calibration and "no interval" not in calibration
    assert "Kappa:" not in calibration


# --- the status badge and progress ------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cancel", "label"),
    [
        (Run.Status.QUEUED, False, "Queued"),
        (Run.Status.RUNNING, False, "Answering"),
        (Run.Status.JUDGING, False, "Judging"),
        (Run.Status.REPORTING, False, "Writing the report"),
        (Run.Status.JUDGING, True, "Cancelling"),
        (Run.Status.DONE, False, "Done"),
        (Run.Status.DONE, True, "Done"),  # a cancel that came too late changes nothing
        (Run.Status.ABORTED_OVER_BUDGET, False, "Aborted Over Budget"),
    ],
)
def test_the_status_label_follows_the_phase(status, cancel, label):
    assert Run(status=status, cancel_requested=cancel).status_label == label


def test_the_badge_on_the_page_and_in_each_poll_shows_the_phase(member):
    run = make_run(status=Run.Status.QUEUED, judge={"model": "fake/large"})
    assert '<span id="run-status" class="status status-queued">Queued</span>' in _page(member, run)

    Run.objects.filter(pk=run.pk).update(status=Run.Status.JUDGING)
    poll = member.get(reverse("run_detail", args=[run.id]) + "?part=progress", **HTMX)
    text = poll.content.decode()

    assert text.strip().startswith('<section id="run-progress"') and "<html" not in text
    # out of band: htmx swaps it into the header, which the poll does not cover
    badge = re.search(r'<span id="run-status"[^>]*>([^<]*)</span>', text)
    assert badge and 'hx-swap-oob="true"' in badge.group(0) and badge.group(1) == "Judging"


def test_between_answers_and_judge_calls_progress_says_it_is_preparing_them(member):
    run = make_run(status=Run.Status.JUDGING, judge={"model": "fake/large"})
    assert not Judgement.objects.filter(run=run).exists()

    text = member.get(reverse("run_detail", args=[run.id]) + "?part=progress", **HTMX)
    text = text.content.decode()

    assert progress(run).activity == "preparing judge calls"
    assert 'Progress <span class="muted">— preparing judge calls</span>' in text
    assert "0 of 0" not in text


def test_the_cancel_fragment_brings_a_cancelling_badge(member):
    owner = make_user()
    client = Client()
    client.force_login(owner)
    run = make_run(status=Run.Status.RUNNING, created_by=owner)

    text = client.post(reverse("run_cancel", args=[run.id]), **HTMX).content.decode()

    assert re.search(r'<span id="run-status"[^>]*hx-swap-oob="true"[^>]*>Cancelling</span>', text)
    assert "cancelling: calls in flight finish" in text


# --- decisions only on finished runs ---------------------------------------------------------


def test_the_decision_form_shows_on_a_finished_run_only(member):
    active = make_run(status=Run.Status.JUDGING)
    finished = make_judged_run()
    action = 'action="{}"'

    active_page = _page(member, active)
    assert action.format(reverse("decision_new", args=[active.id])) not in active_page
    assert "A decision is recorded once the run has finished: it is judging now." in active_page
    assert action.format(reverse("decision_new", args=[finished.id])) in _page(member, finished)


def test_a_decision_posted_on_an_unfinished_run_is_refused_and_says_why(member):
    run = make_run(status=Run.Status.RUNNING)
    url = reverse("decision_new", args=[run.id])
    data = {"verdict": "adopt", "reasoning": "looks good"}

    plain = member.post(url, data)
    htmx = member.post(url, data, **HTMX)

    assert plain.status_code == 409 and htmx.status_code == 409
    assert f"Run {run.id} has not finished (it is answering): no decision was recorded" in (
        plain.content.decode()
    )
    assert "<html" not in htmx.content.decode() and "has not finished" in htmx.content.decode()
    assert not Decision.objects.filter(run=run).exists()
