"""Issue 17, "Seeing them": a case's files show in Chromium on the pair page, the labelling
page and the answers browser, loaded from the app's own media view under its CSP, with no
violation and nothing on the console. Each page is saved as a screenshot to look at."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evalsite.core.suites import load_suite
from runs.models import Pair, PriceTable, Run, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.helpers.browser import CSP_LISTENER, ROOT, execute_in_thread

pytestmark = pytest.mark.django_db(transaction=True)

SUITE_FILE = ROOT / "examples" / "multimodal" / "multimodal.yaml"
VIEWPORT = {"width": 1280, "height": 800}
LOADED = "img => img.complete && img.naturalWidth"


@pytest.fixture
def media_run(settings, tmp_path) -> Run:
    """The multimodal example run by the engine (scripted contestants and judge), its files
    kept in a temporary data dir."""
    settings.DATA_DIR = tmp_path / "data"
    settings.REPORTS_DIR = settings.DATA_DIR / "reports"
    settings.DATA_DIR.mkdir()
    PriceTable.objects.ensure_default()
    loaded = load_suite(SUITE_FILE)
    version, _ = SuiteVersion.objects.register_file(str(SUITE_FILE), loaded)
    options = RunOptions(models=["scripted/careful", "scripted/hasty"], judge="scripted/judge")
    run = execute_in_thread(store_plan(make_plan(version, loaded, options)).id)
    assert run.status == Run.Status.DONE
    return run


def _open(page, url: str):
    page.goto(url)
    page.wait_for_load_state("networkidle")


def _quiet(page) -> list[str]:
    return page.evaluate("window.__csp") + page.watch.problems


def test_the_pair_page_shows_the_scan_and_labelling_shows_it_blind(
    media_run, logged_in, live_server, tmp_path
):
    page = logged_in
    page.set_viewport_size(VIEWPORT)
    page.add_init_script(CSP_LISTENER)
    pair = Pair.objects.get(run=media_run, case_id="invoice-0042")

    _open(page, live_server.url + reverse("pair_detail", args=[media_run.id, pair.pk]))
    thumb = page.locator("img.media-thumb")
    assert thumb.get_attribute("alt") == "scan (image/png)"
    assert thumb.evaluate(LOADED) > 0
    page.screenshot(path=str(tmp_path / "pair.png"), full_page=True)
    assert _quiet(page) == []

    _open(page, live_server.url + reverse("label_pair", args=[media_run.suite.name]))
    if page.locator("img.media-thumb").count() == 0:  # the receipt came first: label it
        assert page.locator("a", has_text="receipt").count() == 1
        with page.expect_response(lambda r: r.request.method == "POST"):
            page.keyboard.press("2")
        page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling')")
        page.wait_for_load_state("networkidle")
    thumb = page.locator("#label-workspace img.media-thumb")
    assert thumb.evaluate(LOADED) > 0
    body = page.locator("body").inner_text()
    assert "careful" not in body and "hasty" not in body
    page.screenshot(path=str(tmp_path / "label.png"), full_page=True)
    assert _quiet(page) == []
    print(f"screenshots: {tmp_path / 'pair.png'} {tmp_path / 'label.png'}")


def test_the_answers_browser_plays_the_voicemail_from_the_apps_origin(
    media_run, logged_in, live_server, tmp_path
):
    page = logged_in
    page.set_viewport_size(VIEWPORT)
    page.add_init_script(CSP_LISTENER)

    _open(page, live_server.url + reverse("answer_list", args=[media_run.id]))
    page.wait_for_function(
        "() => [...document.querySelectorAll('audio')].every(a => a.duration > 0)"
    )
    # one player beside each contestant's answer to the voicemail
    assert page.locator("audio").count() == 2
    assert all(count > 0 for count in page.locator("img.media-thumb").evaluate_all(
        f"imgs => imgs.map({LOADED})"
    ))  # fmt: skip
    assert page.evaluate("document.documentElement.scrollWidth") <= VIEWPORT["width"]
    page.screenshot(path=str(tmp_path / "answers.png"), full_page=True)
    assert _quiet(page) == []
