"""The pair page in Chromium: the question each side was sent is on screen beside the
answers, and the word diff opens from its toggle, with no console error or CSP refusal."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers.factories import make_pair, make_run, make_suite_version
from tests.web.test_pair_page import SUITE

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_question_is_shown_and_the_word_diff_opens_from_its_toggle(logged_in, live_server):
    page = logged_in
    run = make_run(suite_version=make_suite_version(SUITE))
    pair = make_pair(run, "triage", "short", texts=("refund it now", "refund it later"))
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/runs/{run.id}/pairs/{pair.pk}/")

    sent = page.locator("#pair-sent")
    expect(sent).to_contain_text("Ticket: charged twice")
    expect(sent).to_contain_text("You triage support tickets.")
    assert sent.bounding_box()["y"] < 800  # the question is within the first screen

    diff = page.locator("#pair-diff .word-diff")
    expect(diff).to_be_hidden()
    page.locator("#pair-diff > summary").click()
    expect(diff).to_be_visible()
    expect(diff.locator("del")).to_have_text("now")
    expect(diff.locator("ins")).to_have_text("later")
    assert page.watch.problems == []
