"""Every page on every screen from 360 px to 1920 px (issue 30, item 1).

Over the page walk's team dataset (two finished demo runs with judge calls and labels, a
decision, the active price table), every named page is opened at 390 × 844 and 1280 × 800 — as
a member and as staff, the admin's index and change lists for staff — and a few at 360 × 800
and 1920 × 1080. On each: no sideways scroll, no chart label under 10 px, no console error,
no failed request. The run page's key figure is within the first screen; a link of its
sticky contents leaves the heading below the contents; the nav folds behind a Menu button on
a phone and opens inside the dark bar.

The pages walked are checked against the URLconf with the page walk's commented skip list
(``SKIPPED`` in tests/browser/test_page_walk.py: POST-only URLs and downloads), so a new page
cannot escape the walk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from django.urls import reverse

from runs.models import Pair
from tests.browser import test_page_walk as page_walk
from tests.browser.test_page_walk import MEASURE_JS, PASSWORD, SKIPPED, admin_pages, named_pages
from tests.helpers.browser import log_in, settle
from tests.helpers.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

# the page walk's team dataset, as a fixture of this module too
walk_data = page_walk.walk_data

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
SMALL_PHONE = {"width": 360, "height": 800}
WIDE = {"width": 1920, "height": 1080}
NARROW_DESKTOP = {"width": 760, "height": 700}
# the smallest rendered chart text allowed, in CSS pixels (the charts draw at 12)
MIN_CHART_TEXT_PX = 10


@dataclass
class Watch:
    """What a page must never do while it is looked at: log a console error, throw, or have
    a request fail or answer 4xx/5xx. Each problem is tagged with the page and screen."""

    where: str = ""
    problems: list[str] = field(default_factory=list)

    def attach(self, page) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.add(f"page error: {error}"))
        page.on("requestfailed", self._failed)
        page.on("response", self._response)

    def add(self, problem: str) -> None:
        self.problems.append(f"{self.where}: {problem}")

    def _failed(self, request) -> None:
        # Chromium asks for the icon after the load event; the walk's next page aborts that
        # request, which says nothing about the page (a missing icon answers 404, seen below).
        if request.failure == "net::ERR_ABORTED" and request.url.endswith("/favicon.svg"):
            return
        self.add(f"request failed: {request.url} {request.failure}")

    def _console(self, message) -> None:
        if message.type == "error":
            self.add(f"console error: {message.text}")

    def _response(self, response) -> None:
        if response.status >= 400:
            self.add(f"HTTP {response.status} for {response.url}")


def open_page(page, watch: Watch, url: str, screen: dict) -> None:
    """`url` at `screen`, with what is wrong with it added to `watch`."""
    watch.where = f"{url} at {screen['width']}×{screen['height']}"
    page.set_viewport_size(screen)
    page.goto(url)
    settle(page)
    size = page.evaluate(
        "() => ({scroll: document.scrollingElement.scrollWidth, inner: innerWidth})"
    )
    if size["scroll"] > size["inner"]:
        widest = page.evaluate(MEASURE_JS)["widest"]
        watch.add(f"scrolls sideways: {size['scroll']} px in {size['inner']} px; {widest}")
    small = [round(px, 1) for px in chart_text_sizes(page) if px < MIN_CHART_TEXT_PX]
    if small:
        watch.add(f"chart text at {small} px, under {MIN_CHART_TEXT_PX} px")


def chart_text_sizes(page) -> list[float]:
    """The rendered size in CSS pixels of the first label of each chart (an SVG image)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('svg[role=img]')].map(svg => {
             const text = svg.querySelector('text[font-size]');
             return text ? svg.getScreenCTM().a * parseFloat(text.getAttribute('font-size')) : null;
           }).filter(size => size !== null)"""
    )


def first_screen_box(page, selector: str) -> dict:
    """Where the first `selector` sits with the page scrolled to its top."""
    page.evaluate("() => window.scrollTo(0, 0)")
    return page.evaluate(
        """(selector) => {
          const el = document.querySelector(selector);
          if (!el) return null;
          const r = el.getBoundingClientRect();
          return {top: r.top, bottom: r.bottom, height: innerHeight, visible: r.height > 0};
        }""",
        selector,
    )


def headings_under_the_contents(page) -> list[str]:
    """Click each link of the run page's contents; the targets whose top ends under them."""
    targets = page.eval_on_selector_all(".toc a", "links => links.map(a => a.hash)")
    assert len(targets) > 4, targets
    hidden = []
    for target in targets:
        page.click(f".toc a[href='{target}']")
        page.wait_for_function("(hash) => location.hash === hash", arg=target)
        where = page.evaluate(
            """(hash) => ({
                 top: document.querySelector('.toc').getBoundingClientRect().top,
                 toc: document.querySelector('.toc').getBoundingClientRect().bottom,
                 heading: document.querySelector(hash).getBoundingClientRect().top,
               })""",
            target,
        )
        # the summary comes before the contents: they are not stuck at the top then
        stuck = where["top"] <= 1
        if stuck and where["heading"] < where["toc"]:
            hidden.append(
                f"{target}: heading at {where['heading']:.0f}, contents end at {where['toc']:.0f}"
            )
    return hidden


def member_pages(suite, before, after, pairset: str) -> list[tuple[str, str]]:
    """(URL name, URL) for every page a member opens in the walk."""
    pair = Pair.objects.filter(run=after).order_by("pk").first()
    named = [
        ("dashboard", ()),
        ("suite_list", ()),
        ("suite_new", ()),
        ("suite_detail", (suite.name,)),
        ("run_detail", (after.id,)),
        ("answer_list", (after.id,)),
        ("pair_list", (after.id,)),
        ("pair_detail", (after.id, pair.pk)),
        ("compare", ()),
        ("decision_list", ()),
        ("label_home", ()),
        ("label_pair", (suite.name,)),
        ("my_labels", (suite.name,)),
        ("calibration_page", (suite.name,)),
        ("lab_list", ()),
        ("lab_detail", (pairset,)),
        ("prices", ()),
    ]
    pages = [(name, reverse(name, args=args)) for name, args in named]
    pages.append(("compare", reverse("compare") + f"?a={before.id}&b={after.id}"))
    return pages


def make_pairset(page, base: str, suite) -> str:
    """The calibration page's button makes a pair set of the labelled pairs in the judge lab."""
    page.goto(base + reverse("calibration_page", args=(suite.name,)))
    page.get_by_role("button", name="Open in the judge lab").click()
    page.wait_for_url(f"{base}/lab/*/")
    return page.url.rstrip("/").rsplit("/", 1)[1]


def test_every_page_fits_every_screen_for_members_and_staff(walk_data, page, live_server):
    suite, (before, after) = walk_data
    base = live_server.url
    make_user(username="member", password=PASSWORD)
    watch = Watch()
    watch.attach(page)

    page.context.clear_cookies()
    for screen in (PHONE, DESKTOP):
        open_page(page, watch, base + reverse("login"), screen)
    log_in(page, base, "staff", PASSWORD)
    pairset = make_pairset(page, base, suite)
    pages = member_pages(suite, before, after, pairset)
    staff_urls = [url for _, url in pages] + admin_pages()
    for screen in (PHONE, DESKTOP):
        for url in staff_urls:
            open_page(page, watch, base + url, screen)

    log_in(page, base, "member", PASSWORD)
    for screen in (PHONE, DESKTOP):
        for _, url in pages:
            open_page(page, watch, base + url, screen)
    spot = [url for name, url in pages if name in {"dashboard", "run_detail", "pair_detail"}]
    for screen in (SMALL_PHONE, WIDE):
        for url in spot + [reverse("label_pair", args=(suite.name,))]:
            open_page(page, watch, base + url, screen)

    # no page escapes: what is walked plus what is skipped (with its reason) is the URLconf
    walked = {name for name, _ in pages} | {"login"}
    assert walked | set(SKIPPED) == named_pages(), "walk every named page or skip it"
    assert watch.problems == [], "\n".join(watch.problems)


def test_the_run_page_on_a_phone_and_a_desktop(walk_data, page, live_server):
    """The key figure within the first screen; charts legible; headings clear of the contents."""
    suite, (before, after) = walk_data
    base = live_server.url
    log_in(page, base, "staff", PASSWORD)
    watch = Watch()
    watch.attach(page)
    run_url = base + reverse("run_detail", args=(after.id,))

    for screen in (SMALL_PHONE, PHONE, DESKTOP, WIDE):
        open_page(page, watch, run_url, screen)
        box = first_screen_box(page, ".key-figure")
        assert box and box["visible"], f"no key figure on the run page at {screen}"
        assert box["top"] < box["height"], f"key figure below the first screen at {screen}: {box}"
        big = page.evaluate(
            "() => parseFloat(getComputedStyle(document.querySelector('.key-figure')).fontSize)"
        )
        assert big >= 22, f"the key figure is set at {big} px at {screen}"

    # a phone: the contents are not sticky; every chart label renders at >= 10 px
    open_page(page, watch, run_url, PHONE)
    assert page.eval_on_selector(".toc", "el => getComputedStyle(el).position") == "static"
    sizes = chart_text_sizes(page)
    assert sizes, "the run page shows no chart with text"
    assert min(sizes) >= MIN_CHART_TEXT_PX, f"chart text rendered at {sizes} px"

    # a desktop, and a narrow one where the contents wrap to more lines: each link of the
    # sticky contents leaves its heading below the contents
    for screen in (DESKTOP, NARROW_DESKTOP):
        open_page(page, watch, run_url, screen)
        toc_position = page.eval_on_selector(".toc", "el => getComputedStyle(el).position")
        assert toc_position == "sticky", screen
        hidden = headings_under_the_contents(page)
        assert hidden == [], f"at {screen}:\n" + "\n".join(hidden)
    assert watch.problems == [], "\n".join(watch.problems)


def test_the_nav_folds_behind_a_menu_button_on_a_phone(logged_in, live_server):
    page = logged_in
    page.set_viewport_size(PHONE)
    page.goto(live_server.url + reverse("dashboard"))
    toggle = page.locator("button.menu-toggle")
    links = page.locator("#nav-links")
    assert toggle.is_visible()
    assert toggle.get_attribute("aria-controls") == "nav-links"
    assert toggle.get_attribute("aria-expanded") == "false"
    assert not links.is_visible()

    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    bar = page.locator(".topbar").bounding_box()
    for name in ("Compare", "Decisions", "Prices", "Log out"):
        link = page.locator("#nav-links").get_by_text(name, exact=True)
        assert link.is_visible(), name
        box = link.bounding_box()
        # inside the dark bar, and light on dark (readable)
        assert bar["y"] <= box["y"] and box["y"] + box["height"] <= bar["y"] + bar["height"], name
        assert box["x"] + box["width"] <= PHONE["width"], name
        colour = link.evaluate("el => getComputedStyle(el).color")
        assert colour in {"rgb(230, 233, 240)", "rgb(255, 255, 255)"}, (name, colour)
    page.keyboard.press("Escape")
    assert toggle.get_attribute("aria-expanded") == "false"
    assert not links.is_visible()

    # a desktop: no button, the links in one row as before
    page.set_viewport_size(DESKTOP)
    assert not toggle.is_visible()
    assert links.is_visible()
    tops = page.locator(".topbar nav a").evaluate_all(
        "links => links.map(a => Math.round(a.getBoundingClientRect().top))"
    )
    assert len(set(tops)) == 1, tops
    assert page.locator(".topbar").bounding_box()["height"] < 60


def test_the_nav_is_shown_without_javascript(chromium, live_server, django_user_model):
    """With nav.js never loaded the links stay shown on a phone, wrapped inside the bar."""
    django_user_model.objects.create_user(username="member", password=PASSWORD)
    page = chromium.new_page()
    page.route("**/js/nav.js", lambda route: route.abort())
    try:
        page.set_viewport_size(PHONE)
        log_in(page, live_server.url, "member", PASSWORD)
        assert not page.locator("button.menu-toggle").is_visible()
        bar = page.locator(".topbar").bounding_box()
        for name in ("Compare", "Decisions", "Prices", "Log out"):
            link = page.locator("#nav-links").get_by_text(name, exact=True)
            assert link.is_visible(), name
            box = link.bounding_box()
            assert box["y"] + box["height"] <= bar["y"] + bar["height"], name
        assert page.evaluate("() => document.scrollingElement.scrollWidth") <= PHONE["width"]
    finally:
        page.close()


def test_the_three_choices_are_within_the_first_screen(walk_data, page, live_server):
    suite, _ = walk_data
    log_in(page, live_server.url, "staff", PASSWORD)
    url = live_server.url + reverse("label_pair", args=(suite.name,))
    for screen in (PHONE, DESKTOP):
        page.set_viewport_size(screen)
        page.goto(url)
        for choice in ("left", "tie", "right"):
            box = first_screen_box(page, f"button[name=choice][value={choice}]")
            assert box and box["visible"], (screen, choice)
            assert box["bottom"] <= box["height"], (screen, choice, box)
