"""The suite page's "Across runs" card in Chromium at 1280 and 390 px: both charts drawn
inside their card (never wider than it), their titles readable by a screen reader, the table
of figures a click away, the unpriced points said; and the cases paged."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evalsite.core.report.matrix import matrix_report
from tests.helpers.factories import make_run, make_suite_version
from tests.helpers.report import CANDIDATE, CONCISE, make_report
from tests.web.test_suite_across_runs import _many_cases

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_across_runs_card_draws_both_charts_inside_it(logged_in, live_server, width):
    page = logged_in
    version = make_suite_version(_many_cases(120))
    unpriced = make_report("eligible")
    unpriced |= matrix_report(unpriced, unpriced=[CANDIDATE, CONCISE])
    for label, report in (("first", make_report("eligible")), ("second", unpriced)):
        make_run(suite_version=version, status="done", label=label, report=report)
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(f"{live_server.url}/suites/{version.suite.name}/")
    page.locator("#across-runs").scroll_into_view_if_needed()

    card = page.locator("#across-runs")
    for chart, name in (("#runs-over-time", "runs over time"), ("#cost-quality", "Cost against")):
        svg = card.locator(f"{chart} svg")
        expect(svg).to_be_visible()
        expect(svg.get_by_role("img")).to_have_count(0)  # the svg itself is the image
        assert name in svg.locator("title").text_content()
        # the chart keeps its drawn size (text legible on a phone) and scrolls in its figure
        box, inside = card.locator(chart).bounding_box(), card.bounding_box()
        assert box["width"] > 200 and box["x"] + box["width"] <= inside["x"] + inside["width"] + 1
        assert svg.bounding_box()["width"] > 200
    expect(card).to_contain_text("2 points unpriced, not plotted on the cost axis")
    assert card.evaluate("e => e.scrollWidth <= e.clientWidth + 1")  # nothing runs out of it

    table = card.locator("#across-table table")
    expect(table).to_be_hidden()
    card.get_by_text("The figures as a table").click()
    expect(table.locator("tbody tr")).to_have_count(4)

    cases = page.locator("#cases")
    expect(cases.locator("tbody tr")).to_have_count(50)
    cases.get_by_role("link", name="next →").first.click()
    expect(page).to_have_url(f"{live_server.url}/suites/{version.suite.name}/?page=2#cases")
    expect(page.locator("#cases tbody tr").first).to_contain_text("c050")
    assert page.watch.problems == []
