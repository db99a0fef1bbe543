"""Issue 15: every page a member can reach renders at 1280 × 800 in Chromium with no
horizontal overflow and with nothing on the console — no error, no page error, no Content
Security Policy violation — including while the labelling keys are pressed.

The pages walked are checked against the URLconf: a named URL that is neither walked nor
listed in ``SKIPPED`` with its reason fails the walk, so a new page cannot be left out by
accident; and what ``SKIPPED`` says of each URL (POST-only, a download) is checked too."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import get_resolver, reverse

from runs.models import Decision, Pair, Run, SuiteVersion
from tests.helpers.browser import ROOT, execute_in_thread, log_in, settle
from tests.helpers.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

VIEWPORT = {"width": 1280, "height": 800}
PASSWORD = "a-long-test-password"
SUITE_FILE = ROOT / "examples" / "support-desk.yaml"
LABEL_KEYS = ("1", "2", "3", "s", "u")

# Named URLs the walk does not open, and why. Each is checked: a GET must be refused (405)
# for the POST-only ones, so a URL that becomes a page cannot hide here.
POST_ONLY = {
    "logout": "logging out is a POST (the nav's button)",
    "suite_register_file": "registers a suite file found on disk",
    "run_estimate": "an htmx fragment of the new-run form",
    "run_new": "launches a run",
    "run_cancel": "cancels a run",
    "run_pin": "pins a baseline",
    "run_rename": "renames a run (the run page's label form)",
    "decision_new": "records a decision",
    "calibration_to_lab": "makes a pair set (the walk presses its button)",
    "labels_import": "imports a labels file",
}
DOWNLOADS = {
    "run_file": "report files are downloads, opened from disk with their own CSP",
    "decisions_markdown": "DECISIONS.md, plain text",
    "answer_csv": "the answers browser's view as CSV",
    "labels_export": "labels YAML, plain text",
    "lab_report_json": "JSON",
}
# Files a run's cases attach: no page, shown inside the answers, pair and labelling pages
# (tests/browser/test_media.py). The demo suite attaches none, so every hash is refused.
ATTACHED = {"run_media": "a case's attached file, shown inside pages (tests/browser/test_media.py)"}
SKIPPED = POST_ONLY | DOWNLOADS | ATTACHED

# Runs in the page: the document's width and, when it is wider than the window, the element
# that reaches furthest right (the deepest one of those that do), ignoring what sits inside
# a box that clips or scrolls its own overflow.
MEASURE_JS = r"""
() => {
  const doc = document.documentElement;
  const result = {scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, widest: null};
  if (doc.scrollWidth <= doc.clientWidth) return result;
  const clipped = (el) => {
    for (let up = el.parentElement; up && up !== doc; up = up.parentElement)
      if (getComputedStyle(up).overflowX !== 'visible') return true;
    return false;
  };
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
    + [...el.classList].map(c => '.' + c).join('');
  let widest = null, right = 0;
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect().right;
    if (r >= right && r > doc.clientWidth && !clipped(el)) { right = r; widest = el; }
  }
  if (widest) {
    const path = [];
    for (let el = widest; el && el !== doc; el = el.parentElement) path.unshift(name(el));
    result.widest = `${path.join(' > ')} reaches ${Math.round(right)} px: `
      + widest.outerHTML.slice(0, 200);
  }
  return result;
}
"""


class Console:
    """Everything a page said that it must not: console errors (a CSP violation is one) and
    uncaught exceptions, each tagged with the page being looked at."""

    def __init__(self, page):
        self.where = ""
        self.problems: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"{self.where}: {error}"))

    def _console(self, message) -> None:
        if message.type == "error":
            self.problems.append(f"{self.where}: console error: {message.text}")


def named_pages() -> set[str]:
    """Every URL name outside a namespace (the admin has its own) in the URLconf."""
    return {key for key in get_resolver().reverse_dict if isinstance(key, str)}


def admin_pages() -> list[str]:
    return [reverse("admin:index")] + [
        reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        for model in admin.site._registry
    ]


@pytest.fixture
def walk_data():
    """The demo suite with two finished fake runs (judged; the suite file carries labels), a
    decision on the later one, the active price table and a staff member."""
    from evalsite.core.suites import load_suite
    from runs.models import PriceTable
    from runs.planning.planner import RunOptions, make_plan, store_plan

    PriceTable.objects.ensure_default()
    staff = make_user(username="staff", password=PASSWORD, is_staff=True, is_superuser=True)
    loaded = load_suite(SUITE_FILE)
    version, _ = SuiteVersion.objects.register_file(str(SUITE_FILE), loaded)
    runs = []
    for label in ("before", "after"):
        plan = make_plan(version, loaded, RunOptions(fake=True, label=label))
        runs.append(execute_in_thread(store_plan(plan, user=staff).id, timeout=120))
    assert [run.status for run in runs] == [Run.Status.DONE, Run.Status.DONE]
    Decision.objects.create(
        run=runs[1],
        decided_by=staff,
        verdict=Decision.Verdict.KEEP,
        reasoning="Kappa is below the floor: label more pairs before switching models.",
    )
    return version.suite, runs


def _look(page, console: Console, url: str, failures: list[str]) -> None:
    """Open `url` and record what is wrong with it in `failures`."""
    console.where = url
    response = page.goto(url)
    settle(page)
    if response is None or response.status >= 400:
        failures.append(f"{url}: HTTP {response.status if response else 'no response'}")
    _measure(page, url, failures)


def _measure(page, where: str, failures: list[str]) -> None:
    size = page.evaluate(MEASURE_JS)
    if size["scrollWidth"] > size["clientWidth"] or size["scrollWidth"] > VIEWPORT["width"]:
        failures.append(
            f"{where}: {size['scrollWidth']} px wide in a {size['clientWidth']} px window;"
            f" {size['widest'] or 'no single element found'}"
        )


def _label_with_keys(page, console: Console, url: str, failures: list[str]) -> None:
    """A note typed after `n` and left with Escape, then each labelling key in turn, the note
    box resized by its corner before each (as people do), waiting for each htmx swap."""
    console.where = f"{url} after key 'n'"
    page.keyboard.press("n")
    assert page.evaluate("document.activeElement.name") == "note"
    page.keyboard.type("both answers are fine")
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.name") != "note"
    for key in LABEL_KEYS:
        _resize_note(page)
        console.where = f"{url} after key {key!r}"
        with page.expect_response(lambda r: r.request.method == "POST" and "/label/" in r.url):
            page.keyboard.press(key)
        settle(page)
        _measure(page, console.where, failures)


def _resize_note(page) -> None:
    """Drag the note box's corner down: the browser keeps the new size in its style attribute."""
    note = page.locator("#label-workspace textarea[name=note]")
    box = note.bounding_box()
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] - 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] + 40, steps=4)
    page.mouse.up()
    assert "height" in (note.get_attribute("style") or ""), "the note box did not resize"


def test_every_page_fits_1280_px_with_a_quiet_console(walk_data, page, live_server):
    suite, (before, after) = walk_data
    base = live_server.url
    page.set_viewport_size(VIEWPORT)
    console = Console(page)
    failures: list[str] = []
    visited: set[str] = set()

    def look(name: str, *args, query: str = "") -> None:
        visited.add(name)
        _look(page, console, base + reverse(name, args=args) + query, failures)

    page.context.clear_cookies()
    look("login")
    log_in(page, base, "staff", PASSWORD, open_form=False)

    pair = Pair.objects.filter(run=after).order_by("pk").first()
    look("dashboard")
    look("suite_list")
    look("suite_new")
    look("suite_detail", suite.name)
    look("run_detail", after.id)
    look("answer_list", after.id)
    look("pair_list", after.id)
    look("pair_detail", after.id, pair.pk)
    look("compare")
    look("compare", query=f"?a={before.id}&b={after.id}")
    look("decision_list")
    look("label_home")
    look("label_pair", suite.name)
    _label_with_keys(page, console, page.url, failures)
    look("label_pair", suite.name, query="?mode=targeted")
    look("my_labels", suite.name)
    look("calibration_page", suite.name)

    # the calibration page's button makes a pair set of the labelled pairs in the judge lab
    console.where = "calibration → judge lab"
    page.get_by_role("button", name="Open in the judge lab").click()
    page.wait_for_url(f"{base}/lab/*/")
    pairset = page.url.rstrip("/").rsplit("/", 1)[1]
    look("lab_list")
    look("lab_detail", pairset)
    look("prices")
    for url in admin_pages():
        _look(page, console, base + url, failures)

    skipped = {"name": suite.name, "sha": suite.versions.get().short_hash, "run_id": after.id}
    _check_skipped(page, base, skipped | {"pairset": pairset}, failures)

    assert visited | set(SKIPPED) == named_pages(), "walk every named page or skip it"
    # dialogs and requests to another host (the page fixture's watch; console already here)
    problems = failures + console.problems
    problems += [p for p in page.watch.problems if not p.startswith("console")]
    assert problems == [], "\n".join(problems)


def _check_skipped(page, base: str, values: dict[str, str], failures: list[str]) -> None:
    """SKIPPED tells the truth: its POST-only URLs refuse a GET, its downloads are no page."""
    values_for = {
        "run_file": {"name": "report.html"},
        "lab_report_json": {"name": values["pairset"]},
        "run_media": {"sha256": "0" * 64},
    }
    for name in SKIPPED:
        given = values | values_for.get(name, {})
        params = get_resolver().reverse_dict.getlist(name)[0][0][0][1]
        url = base + reverse(name, kwargs={param: given[param] for param in params})
        response = page.request.get(url, max_redirects=0)
        headers = response.headers
        if name in POST_ONLY and response.status != 405:
            failures.append(f"{url}: skipped as POST-only, but a GET answers {response.status}")
        if name in ATTACHED and response.status != 404:
            failures.append(f"{url}: a file the suite does not attach answers {response.status}")
        page_like = "text/html" in headers.get("content-type", "")
        if name in DOWNLOADS and (
            response.status != 200
            or (page_like and "attachment" not in headers.get("content-disposition", ""))
        ):
            failures.append(
                f"{url}: skipped as a download, but answers {response.status} "
                f"{headers.get('content-type')}"
            )
