"""In Chromium at 1280×800: the new-run form's estimate says why it cannot estimate as a bad
cap is typed, and a launch refused for its label comes back with the label focused, its
error beside it, both on the first screen (not at the page's top ~2,000 px away)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.web.test_run_form import _version

pytestmark = pytest.mark.django_db(transaction=True)
WIDTH, HEIGHT = 1280, 800
RUN_ID_LIKE = "20261203T141439Z_adfb"


def _on_screen(locator) -> None:
    box = locator.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= HEIGHT, box


def _form(page, live_server):
    """The new-run form of a fresh suite, at 1280×800."""
    version = _version()
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page.goto(f"{live_server.url}/suites/{version.suite.name}/")
    return page.locator("#new-run form")


def test_a_bad_cap_says_why_there_is_no_estimate(logged_in, live_server):
    page = logged_in
    form = _form(page, live_server)

    form.get_by_label("Cap (USD)").fill("-1")
    form.get_by_label("Cap (USD)").press("Tab")

    estimate = page.locator("#run-estimate")
    expect(estimate).to_contain_text("Cannot estimate until this is fixed:", timeout=20_000)
    expect(estimate).to_contain_text("Cap (USD): the cap must be a positive number of USD")
    assert page.watch.problems == []


def test_a_refused_label_comes_back_focused_with_its_error_beside_it(logged_in, live_server):
    page = logged_in
    form = _form(page, live_server)
    form.get_by_label("Fake answers").check()
    form.get_by_label("Label").fill(RUN_ID_LIKE)

    form.get_by_role("button", name="Launch run").click()

    label = page.locator("#new-run form").get_by_label("Label")
    expect(label).to_be_focused()
    expect(label).to_have_value(RUN_ID_LIKE)
    error = page.locator("#id_label_error")
    expect(error).to_contain_text("looks like a run id")
    _on_screen(label)
    _on_screen(error)
    refused = "the server responded with a status of 400"  # the form sent back: expected
    assert [p for p in page.watch.problems if refused not in p] == []
