"""The labelling page in Chromium puts the choice first: at 1280×800 and 390×844 the pair and
the three choice buttons are on the first screen; a keyboard label shows the stored toast, undo
its message; `?` opens the keys overlay and Esc closes it; the guidelines are beside the pair."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from runs.models import Answer, Label
from tests.web.test_labelling_page import GUIDELINES, guided_run  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)
CHOICES = ('button[data-key="1"]', 'button[data-key="2"]', 'button[data-key="3"]')


def _top(page, selector: str) -> float:
    return page.locator(selector).first.evaluate("el => el.getBoundingClientRect().top")


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)])
def test_the_pair_and_the_three_choices_are_on_the_first_screen(
    guided_run,  # noqa: F811
    logged_in,
    live_server,
    size,
):
    page = logged_in
    # long answers: the choices must not wait below them
    Answer.objects.update(text="\n".join(f"line {n} of a long answer" for n in range(80)))
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(f"{live_server.url}/label/blind/")
    height = page.evaluate("window.innerHeight")
    assert page.evaluate("window.scrollY") == 0
    for selector in ("#label-pair .answer", *CHOICES):
        expect(page.locator(selector).first).to_be_visible()
        assert 0 <= _top(page, selector) < height, (selector, _top(page, selector), height)
    # the run picker is folded away
    expect(page.locator("#label-run")).not_to_have_attribute("open", "")
    expect(page.locator("#calibration-run-choice")).to_be_hidden()
    assert page.watch.problems == []


def test_keys_toast_undo_overlay_and_guidelines(guided_run, logged_in, live_server):  # noqa: F811
    page = logged_in
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"{live_server.url}/label/blind/")
    guide = page.locator("#label-guide")
    expect(guide).to_be_visible()
    expect(guide).to_contain_text(GUIDELINES)

    page.keyboard.press("1")
    expect(page.locator("#label-toast")).to_have_text("stored: left better · u to undo")
    assert Label.objects.count() == 1
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling')")
    page.keyboard.press("u")
    expect(page.locator("#label-toast")).to_have_text("undone: left better")
    assert Label.objects.count() == 0

    overlay = page.locator("#label-keys")
    expect(overlay).to_be_hidden()
    page.keyboard.press("?")
    expect(overlay).to_be_visible()
    expect(overlay).to_contain_text("Right is better")
    page.keyboard.press("3")  # a key behind the open overlay stores nothing
    page.keyboard.press("Escape")
    expect(overlay).to_be_hidden()
    assert Label.objects.count() == 0
    page.locator("#label-keys-open").click()
    expect(overlay).to_be_visible()
    page.locator("#label-keys-close").click()
    expect(overlay).to_be_hidden()
    assert page.watch.problems == []
