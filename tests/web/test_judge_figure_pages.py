"""The label-corrected win-rate on the run page and in MCP's reply, and the paired
intervals on the compare page (issue 19)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evalsite.core.report.build import build_report
from runs.models import Run
from tests.core.report.test_judge_figures import generated_run
from tests.helpers.factories import make_run, make_user

pytestmark = pytest.mark.django_db


def _stored(run_id: str, seed: int, lean: float = 0.2) -> Run:
    report = build_report(generated_run(seed, lean=lean, run_id=run_id)[0])
    return make_run(id=run_id, status=Run.Status.DONE, report=report,
                    contestants=list(report["contestants"]))  # fmt: skip


def _member() -> Client:
    client = Client()
    client.force_login(make_user(username="member"))
    return client


def test_the_run_page_shows_the_corrected_win_rate_beside_the_raw_one():
    run = _stored("20261202T000000Z_a", 1)
    page = _member().get(reverse("run_detail", args=[run.id])).content.decode()
    assert "corrected win-rate 0.509" in page
    assert "n labelled 18 / N judged 194" in page


def test_the_compare_page_shows_each_movers_paired_interval_and_mcnemar():
    a, b = _stored("20261202T000000Z_a", 4), _stored("20261202T000000Z_b", 5, lean=-0.2)
    page = _member().get(reverse("compare") + f"?a={a.id}&b={b.id}").content.decode()
    assert "Paired interval" in page and "n=24" in page  # the tone task's mover
    assert "Paired by case and repeat" in page and "(sign-flip test over cases)" in page
