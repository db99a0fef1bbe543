"""The run page shows the report's Matrix section, linked from its table of contents, with
the frontier's facts and a suite's model names escaped."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Run
from tests.core.report.test_matrix import HAIKU, MINI, MINI_C, SCRIPTED, hand_counted
from tests.helpers.factories import make_run, make_user

pytestmark = pytest.mark.django_db
HOSTILE = "openai/<img src=x onerror=alert(1)>"


@pytest.fixture
def member() -> Client:
    client = Client()
    client.force_login(make_user(username="member"))
    return client


def _page(member: Client, report: dict) -> str:
    run = make_run(status=Run.Status.DONE, contestants=report["contestants"], report=report)
    response = member.get(reverse("run_detail", args=[run.id]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_matrix_is_a_section_of_the_run_page_reachable_from_its_contents(member):
    page = _page(member, hand_counted())
    toc = page.split('class="card toc"', 1)[1].split("</nav>", 1)[0]
    assert '<a href="#matrix">Matrix</a>' in toc
    section = page.split('<section id="matrix">', 1)[1].split("</section>", 1)[0]
    assert f"<code>{SCRIPTED}</code>" in section and "unpriced" in section
    assert "not beaten on both score and cost" in section
    assert f"<code>{MINI}</code>, <code>{MINI_C}</code>" in section
    assert f"<code>{HAIKU}</code>" in section


def test_a_hostile_model_name_in_the_matrix_is_escaped(member):
    report = hand_counted()
    report["contestants"] = [HOSTILE, *report["contestants"][1:]]
    report["per_contestant"] = {HOSTILE: report["per_contestant"][MINI]}
    del report["matrix"], report["frontier"]
    page = _page(member, report)
    section = page.split('<section id="matrix">', 1)[1].split("</section>", 1)[0]
    assert "<img" not in section and "&lt;img src=x onerror=alert(1)&gt;" in section
