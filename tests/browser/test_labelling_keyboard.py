"""Two members label side by side in real Chromium with the keyboard only (issue 7): the
calibration panel changes after each label, the overlap pairs give a human-human kappa, and
a report built afterwards uses the labels."""

from __future__ import annotations

import os
import re

import pytest
from django.test import override_settings

from runs.models import Label, Run
from runs.results.reporting import write_report
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, PageWatch, log_in
from tests.helpers.factories import make_user
from tests.labels.test_labelling import run  # noqa: F401 - the fixture: a judged scripted run

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a-long-test-password"


@pytest.fixture
def two_browsers():
    """Two separate browser contexts (two cookie jars) on one headless Chromium."""
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            # launch() gives the browser a fresh temporary profile of its own
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            contexts = [browser.new_context(), browser.new_context()]
            yield contexts
            for context in contexts:
                context.close()
            browser.close()
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


def _log_in(context, origin: str, username: str):
    page = context.new_page()
    page.watch = PageWatch(page, origin)
    log_in(page, origin, username, PASSWORD)
    return page


def _panel(page) -> str:
    return page.locator("#calibration-panel").inner_text()


def _labelled(page) -> int:
    text = page.locator("#label-progress").inner_text()
    return int(re.search(r"(\d+) by you", text).group(1))


def _press(page, key: str) -> None:
    before = _labelled(page)
    page.keyboard.press(key)
    page.wait_for_function(
        "n => { const el = document.querySelector('#label-progress');"
        " return el && !el.innerText.includes(n + ' by you'); }",
        arg=before,
    )


@override_settings(EVALSITE_LABEL_OVERLAP=1.0)
def test_two_members_label_with_the_keyboard_and_watch_kappa_move(run, live_server, two_browsers):  # noqa: F811
    for name in ("ann", "bob"):
        make_user(username=name, password=PASSWORD)
    ann = _log_in(two_browsers[0], live_server.url, "ann")
    bob = _log_in(two_browsers[1], live_server.url, "bob")
    for page in (ann, bob):
        page.goto(f"{live_server.url}/label/blind/")
        assert page.locator("#label-workspace").is_visible()

    keys = ["1", "3", "2", "1", "3", "1"]
    moved = []
    for index, key in enumerate(keys):
        for page in (ann, bob):
            if index == 2:  # a note, typed after `n`, left with Escape, then the label
                page.keyboard.press("n")
                page.keyboard.type("both answer the question")
                page.keyboard.press("Escape")
            before = _panel(page)
            _press(page, key)
            moved.append(_panel(page) != before)
    # every label changed the live panel in the same htmx response (a second label that
    # disagrees with the first leaves its pair without a majority: n can go down as well)
    assert all(moved), moved

    # `s` skips and `u` undoes, also from the keyboard
    ann.keyboard.press("s")
    ann.wait_for_timeout(300)
    _press(ann, "u")
    assert _labelled(ann) == len(keys) - 1

    assert Label.objects.filter(labeller_name="ann").count() == len(keys) - 1
    assert Label.objects.filter(labeller_name="bob").count() == len(keys)
    assert Label.objects.filter(note="both answer the question").count() == 2

    # both labelled the same pairs (the overlap share is 1 here): the people-vs-people kappa
    ann.goto(f"{live_server.url}/suites/blind/calibration/")
    humans = ann.locator("#humans").inner_text()
    assert "ann~bob" in humans and "Fleiss' kappa" in humans
    # every pair both labelled but the one ann took back: a pair she labelled in the sample
    # is not waiting for her in review, so bob's label of it is not hidden from her
    assert f"{len(keys) - 1} pairs labelled by two or more people" in humans, humans

    for page in (ann, bob):
        assert page.watch.problems == []

    report = write_report(Run.objects.get(pk=run.pk))
    assert report["calibration"]["labels_used"]["browser"] == 2 * len(keys) - 1
    assert report["calibration"]["humans"]["n_items"] >= len(keys) - 1
    assert "ann~bob" in report["calibration"]["humans"]["pairwise"]
