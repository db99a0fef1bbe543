"""The run page in Chromium at 1280 px: the summary card is in the first viewport, nothing
overflows sideways, no console error; the status badge follows the phase while the page
polls; and report.html's win-rate table keeps its names readable."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsite.core.report.html import render_html
from evalsite.core.suites import parse_suite
from runs.models import PriceTable, Run, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.engine.test_judging import SUITE, _replies
from tests.helpers.browser import execute_in_thread
from tests.helpers.factories import make_run
from tests.helpers.report import make_report

pytestmark = pytest.mark.django_db(transaction=True)
WIDTH, HEIGHT = 1280, 800


def _run(tmp_path) -> Run:
    """tests.engine.test_judging's judged run (scripted, no labels), executed off Playwright's loop."""
    PriceTable.objects.ensure_default()
    replies = tmp_path / "replies.yaml"
    replies.write_text(_replies())
    text = SUITE.format(labels="", min_labels=10)
    loaded = parse_suite(text.encode(), filename="judged.yaml", origin="upload")
    version, _ = SuiteVersion.objects.register(loaded, text, origin="upload")
    run = store_plan(make_plan(version, loaded, RunOptions(replies=str(replies))))
    return execute_in_thread(run.id)


def test_a_finished_run_opens_on_its_summary_card_without_overflow(
    logged_in, live_server, tmp_path
):
    page = logged_in
    run = _run(tmp_path)
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

    page.goto(f"{live_server.url}/runs/{run.id}/")

    card = page.locator("#summary")
    expect(card).to_contain_text("No headline: the win-rates are UNCALIBRATED")
    expect(card).to_contain_text("No labels yet.")
    box = page.locator("#summary-title").bounding_box()
    assert box is not None and box["y"] < HEIGHT, box
    assert card.bounding_box()["y"] < HEIGHT
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    # a link of the table of contents lands on its section
    page.locator(".toc a[href='#charts']").click()
    expect(page.locator("#charts")).to_be_in_viewport()
    assert page.watch.problems == []


def test_the_status_badge_follows_the_phase_while_the_page_polls(logged_in, live_server):
    page = logged_in
    run = make_run(status=Run.Status.RUNNING, judge={"model": "fake/large"})
    page.goto(f"{live_server.url}/runs/{run.id}/")
    expect(page.locator("#run-status")).to_have_text("Answering")

    Run.objects.filter(pk=run.pk).update(status=Run.Status.JUDGING)

    expect(page.locator("#run-status")).to_have_text("Judging", timeout=5_000)
    expect(page.locator("#run-progress")).to_contain_text("preparing judge calls")
    assert page.locator("#run-status").count() == 1
    assert page.watch.problems == []


def test_report_html_keeps_the_win_rate_tables_names_readable(page):
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page.set_content(render_html(make_report("uncalibrated")))

    row = page.locator("#win-rates table tbody tr").first
    for column in (1, 2):  # candidate, vs: model names
        cell = row.locator("td").nth(column - 1)
        width = cell.bounding_box()["width"]
        line = float(cell.evaluate("e => parseFloat(getComputedStyle(e).lineHeight) || 20"))
        # a name wraps at its hyphens at most: never one character a line
        assert width > 80 and cell.bounding_box()["height"] < 4 * line, (column, width)
    # and the whole table fits its column: nothing hides behind a sideways scroll
    table = page.locator("#win-rates table").bounding_box()
    assert table["width"] <= page.locator("#win-rates .scroll").bounding_box()["width"] + 1
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
