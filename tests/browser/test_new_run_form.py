"""Issue 15, the new-run form in a browser against the real server (`evalsite serve`, with its
worker): from the empty dashboard's first-run button to the demo suite's form, a scripted
contestant and a variant, an uploaded replies file, a scripted judge, repeats and a cap;
the live estimate names them, the run is launched, and it reaches done."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import ROOT, PageWatch, Served, log_in

REPLIES = ROOT / "examples" / "support-desk.replies.yaml"
BASELINE, CANDIDATE = "scripted/good", "scripted/sloppy@concise"


@pytest.fixture
def served(tmp_path):
    server = Served(tmp_path / "data")
    try:
        yield server, tmp_path / "data"
    finally:
        server.kill()


def _stored_run(data_dir, run_id: str) -> dict:
    with sqlite3.connect(f"file:{data_dir / 'evalsite.sqlite3'}?mode=ro", uri=True) as db:
        row = db.execute(
            "select contestants, judge, repeats, cap_usd, options from runs_run where id = ?",
            [run_id],
        ).fetchone()
    contestants, judge, repeats, cap, options = row
    return {
        "contestants": json.loads(contestants),
        "judge": json.loads(judge),
        "repeats": repeats,
        "cap": str(cap),
        "options": json.loads(options),
    }


def _demo_cases() -> int:
    from evalsite.core.suites import load_suite

    return sum(
        len(task.cases) for task in load_suite(ROOT / "examples" / "support-desk.yaml").tasks
    )


def test_the_form_launches_a_scripted_variant_run_with_a_judge_repeats_and_a_cap(served, chromium):
    served, data_dir = served
    served.wait_for(r"serving on http://127\.0\.0\.1:")
    password = served.wait_for(r"password: (\S+)").group(1)
    base = served.url
    page = chromium.new_page()
    watch = PageWatch(page, base)
    try:
        log_in(page, base, "admin", password)

        # the empty dashboard offers the demo suite's run form
        nav = page.locator("nav[aria-label=Main] a[aria-current=page]")
        expect(nav).to_have_text(["Dashboard"])
        page.locator("#first-run").get_by_role("link", name="Start a first run").click()
        page.wait_for_url(re.compile(rf"^{re.escape(base)}/suites/support-desk/\?.*#new-run$"))
        expect(nav).to_have_text(["Suites"])

        form = page.locator("#new-run form")
        # preset to the demo's offline first run: sloppy the baseline, good, the scripted judge
        expect(form.get_by_label("scripted/sloppy", exact=True)).to_be_checked()
        expect(form.get_by_label("Position of scripted/sloppy")).to_have_value("1")
        expect(form.get_by_label("scripted/good", exact=True)).to_be_checked()
        expect(form.get_by_label("Position of scripted/good")).to_have_value("2")
        expect(form.get_by_label(re.compile(r"^Judge"))).to_have_value("scripted/judge")
        for box in form.locator("fieldset.contestants input[type=checkbox]").all():
            if box.is_checked():
                box.uncheck()
        form.get_by_label(BASELINE, exact=True).check()
        form.get_by_label(f"Position of {BASELINE}").fill("1")
        form.get_by_label("Other contestants").fill(CANDIDATE)
        form.get_by_label("Replies file").set_input_files(str(REPLIES))
        form.get_by_label(re.compile(r"^Judge")).fill("scripted/judge")
        form.get_by_label("Repeats").fill("2")
        form.get_by_label("Cap (USD)").fill("0.50")
        form.get_by_label("Cap (USD)").press("Tab")  # a change event: the estimate follows

        estimate = page.locator("#run-estimate")
        expect(estimate).to_contain_text("against a cap of $0.5000", timeout=20_000)
        expect(estimate).to_contain_text(f"{CANDIDATE}: {2 * _demo_cases()} calls")  # 2 repeats
        expect(estimate).to_contain_text("judge scripted/judge")
        expect(estimate).not_to_contain_text("not set in the server")

        form.get_by_role("button", name="Launch run").click()
        page.wait_for_url(re.compile(rf"^{re.escape(base)}/runs/[^/]+/$"))
        run_id = page.url.rstrip("/").rsplit("/", 1)[1]
        # the run page follows the run and reloads itself when it ends (docs/web.md)
        page.wait_for_selector(".status.status-done", timeout=240_000)

        stored = _stored_run(data_dir, run_id)
        assert stored["contestants"] == [BASELINE, CANDIDATE]
        assert stored["judge"]["model"] == "scripted/judge" and stored["repeats"] == 2
        assert stored["cap"].startswith("0.5") and stored["options"]["fake"] is False
        assert stored["options"]["replies"].endswith(".yaml")

        # the suite page lists the run near its top, done
        page.goto(f"{base}/suites/support-desk/")
        listed = page.locator("#suite-runs tbody tr").filter(
            has=page.locator(f"a[href*='{run_id}']")
        )
        expect(listed).to_have_count(1)
        expect(listed.locator(".status")).to_have_text("Done")
        assert watch.problems == []
    finally:
        page.close()
    assert served.interrupt(timeout=40) == 0, served.output
