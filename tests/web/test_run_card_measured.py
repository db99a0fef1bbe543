"""The run page's summary card leads with what the run measured: the matrix or scorecard
score of a run without pairwise judging (the key figure first, no UNCALIBRATED over n/a
rows), the win-rates of a judged run; and `evalsite list` says the same words."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from evalsite.core.scoring.scorecard import Criterion
from runs.models import Run
from tests.core.report.test_matrix import HAIKU, MINI_C, SCRIPTED, hand_counted
from tests.helpers.factories import make_run, make_user
from tests.helpers.report import make_report

pytestmark = pytest.mark.django_db


@pytest.fixture
def member(client: Client) -> Client:
    client.force_login(make_user(username="member"))
    return client


def _card(member: Client, report: dict, **run) -> str:
    run = make_run(status=Run.Status.DONE, contestants=report["contestants"], report=report, **run)
    page = member.get(reverse("run_detail", args=[run.id])).content.decode()
    return re.search(r'<section id="summary".*?</section>', page, re.S).group(0)


def _key_figure(card: str) -> str:
    return re.search(r'<strong class="key-figure">([^<]*)</strong>', card).group(1)


def test_a_matrix_run_leads_with_its_matrix_score(member):
    card = _card(member, hand_counted(), judge={})
    assert '<h2 id="summary-title">Matrix score</h2>' in card
    assert _key_figure(card) == "1.000"
    assert f"<code>{MINI_C}, {HAIKU}, {SCRIPTED}</code>" in card
    assert "UNCALIBRATED" not in card and "No headline" not in card
    assert card.index("key-figure") < card.index("Cost:")
    assert "No judge in this run: no win-rates." in card


def test_a_scorecard_run_leads_with_its_scorecard_score(member):
    report = hand_counted(scorecard=(Criterion("format", 1, "schema"),))
    card = _card(member, report, judge={})
    assert '<h2 id="summary-title">Scorecard score</h2>' in card
    assert _key_figure(card) == "1.000" and "the scorecard&#x27;s weighted score" in card
    assert "UNCALIBRATED" not in card


def test_a_judged_run_leads_with_its_win_rates(member):
    card = _card(member, make_report("eligible"))
    assert "Headline" in card and _key_figure(card) == "0.463"
    assert "Matrix score" not in card


def test_the_run_list_says_what_the_card_leads_with():
    make_run(status=Run.Status.DONE, contestants=hand_counted()["contestants"],
             report=hand_counted(), judge={})  # fmt: skip
    out = io.StringIO()
    call_command("list", stdout=out)
    assert f"Matrix score 1.000: {MINI_C}, {HAIKU}, {SCRIPTED} (highest of 5)" in out.getvalue()
