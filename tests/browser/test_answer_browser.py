"""The answers browser in Chromium: a long answer opens whole in place and folds again, a
search narrows the rows without reloading the page, a bad regex says why beside the field,
and a run is renamed in place on its run page. No console error, no CSP violation."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from runs.models import Run
from tests.helpers.factories import make_answer, make_run

pytestmark = pytest.mark.django_db(transaction=True)
VIEWPORT = {"width": 1280, "height": 800}
LONG = "Refunds take " + "thirty days, " * 80 + "END-OF-ANSWER"


@pytest.fixture
def run() -> Run:
    run = make_run(status=Run.Status.DONE)
    small, large = run.contestants
    make_answer(run, "t", "long", large, passed=True, text=LONG)
    make_answer(run, "t", "long", small, passed=False, text="no refunds at all")
    make_answer(run, "t", "short", small, passed=True, text="a short answer about shipping")
    return run


def _open(page, url: str) -> None:
    page.set_viewport_size(VIEWPORT)
    page.goto(url)
    page.wait_for_load_state("networkidle")


def test_a_long_answer_expands_in_place_and_folds_again(logged_in, live_server, run):
    page = logged_in
    _open(page, live_server.url + reverse("answer_list", args=[run.id]))
    full = page.locator("details.answer-full")
    whole = full.locator("pre.answer-text:not(.answer-clip)")
    assert not whole.is_visible()

    full.locator("summary").click()

    assert whole.is_visible() and "END-OF-ANSWER" in whole.inner_text()
    assert not full.locator(".answer-clip").is_visible()  # the clip gives way to the whole
    full.locator("summary").click()
    assert not whole.is_visible()
    assert page.watch.problems == []


def test_search_narrows_the_rows_in_place_and_a_bad_regex_says_why(logged_in, live_server, run):
    page = logged_in
    _open(page, live_server.url + reverse("answer_list", args=[run.id]))
    page.evaluate("() => { window.__marker = 'same page'; }")  # gone if the page reloads
    rows = page.locator("tr.answer-row")
    assert rows.count() == 3

    page.fill("#answer-q", "SHIPPING")
    page.press("#answer-q", "Enter")
    expect(rows).to_have_count(1)
    assert "short answer about shipping" in rows.first.inner_text()
    assert "q=SHIPPING" in page.url and page.evaluate("() => window.__marker") == "same page"

    page.check("input[name=regex]")
    page.fill("#answer-q", "(?i)refunds? (at|take)")
    page.press("#answer-q", "Enter")
    expect(rows).to_have_count(2)

    page.fill("#answer-q", "(?=refund)")
    page.press("#answer-q", "Enter")
    error = page.locator("#search-error")
    error.wait_for(state="visible")
    assert "invalid regular expression" in error.inner_text()
    assert "look-around" in error.inner_text()
    assert page.watch.problems == []


def test_a_run_is_renamed_in_place_on_its_page(logged_in, live_server, run):
    page = logged_in
    _open(page, live_server.url + reverse("run_detail", args=[run.id]))

    page.fill("#run-label-input", "latest")
    page.click("#run-label button[type=submit]")
    page.locator("#run-label-error").wait_for()
    assert "already names a run" in page.locator("#run-label-error").inner_text()

    page.fill("#run-label-input", "refund wording v2")
    page.click("#run-label button[type=submit]")
    page.get_by_text("Renamed to refund wording v2.").wait_for()
    run.refresh_from_db()
    assert run.label == "refund wording v2"
    assert page.watch.problems == []
