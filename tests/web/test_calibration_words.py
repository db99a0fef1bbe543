"""One vocabulary for calibration: the dashboard, the suite page, the run page's card, the
labelling panel and the calibration page say a gate status in the same words, from
evalsite.core.stats.gate, and never its raw code; the per-task Band column is filled."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.test import Client

from evalsite.core.stats.gate import GATE_STATUSES, GATE_WORDS, band_words, gate_words
from runs.models import Pair
from tests.helpers.factories import make_judged_run, make_label, make_user
from tests.helpers.report import make_report

pytestmark = pytest.mark.django_db
CODES = re.compile("|".join([*GATE_STATUSES[:-1], "kappa is stale"]))


@pytest.fixture
def member(client: Client) -> Client:
    client.force_login(make_user(username="member"))
    return client


def _text(member: Client, url: str) -> str:
    """The page's words as a member reads them, the stored report's own section left out
    (report.html, with the codes its file format names)."""
    page = member.get(url).content.decode()
    page = re.sub(r'<section class="card report">.*?</section>\s*(?=<section id="run-dec)', "",
                  page, flags=re.S)  # fmt: skip
    return unescape(re.sub(r"<[^>]+>", " ", page))


def test_every_gate_status_has_words_and_anything_else_is_not_calibrated():
    assert set(GATE_WORDS) == set(GATE_STATUSES)
    assert gate_words("below_floor") == "judge agreement below the floor"
    assert gate_words("none") == gate_words(None) == "not calibrated"
    assert band_words(None, low_n=True) == "no band: too few labels"
    assert band_words("fair") == "fair"


def test_no_page_shows_a_raw_calibration_code(member):
    run = make_judged_run(report=make_report("uncalibrated"))
    name = run.suite.name
    make_label(Pair.objects.filter(run=run).first())
    pages = {
        "dashboard": "/",
        "suite": f"/suites/{name}/",
        "run": f"/runs/{run.id}/",
        "labelling": f"/label/{name}/",
        "calibration": f"/suites/{name}/calibration/",
    }
    texts = {page: _text(member, url) for page, url in pages.items()}
    for page, text in texts.items():
        assert not CODES.search(text), (page, CODES.search(text).group(0))
    # the same words for the suite's status on each page that shows it
    words = gate_words("kappa_undefined")
    for page in ("dashboard", "suite", "labelling", "calibration"):
        assert words in texts[page], page
    assert "Refused by the calibration gate: judge agreement below the floor" in texts["run"]


def test_the_per_task_band_column_is_filled(member):
    run = make_judged_run()
    make_label(Pair.objects.filter(run=run).first())
    page = member.get(f"/suites/{run.suite.name}/calibration/").content.decode()
    table = page.split("<h2>Per task", 1)[1].split("</table>", 1)[0]
    assert "<td>no band: too few labels</td>" in table
