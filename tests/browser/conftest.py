"""Playwright driving Debian's Chromium (/usr/bin/chromium) against pytest-django's live server."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from tests.browser.helpers import log_in

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="module")
def chromium():
    """One browser per test module, with a fresh profile; closed before other tests run."""
    if not os.path.exists(CHROMIUM):
        pytest.fail("Debian's chromium is not installed: run scripts/system-deps (make test does)")
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="evalsite-chromium-")
    # Playwright's sync API keeps an event loop in this thread; the ORM calls the tests
    # make between page actions are still synchronous.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            yield context
            context.close()
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
        shutil.rmtree(profile, ignore_errors=True)


class PageWatch:
    """Collects what must never happen on a page: dialogs, CSP violations, foreign requests."""

    def __init__(self, page, origin: str):
        self.problems: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", self._console)
        page.on("request", lambda request: self._request(request, origin))

    def _dialog(self, dialog):
        self.problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    def _console(self, message):
        if "Content Security Policy" in message.text or message.type == "error":
            self.problems.append(f"console {message.type}: {message.text}")

    def _request(self, request, origin: str):
        if not request.url.startswith((origin, "data:", "about:")):
            self.problems.append(f"request to {request.url}")


@pytest.fixture
def page(chromium, live_server):
    page = chromium.new_page()
    page.watch = PageWatch(page, live_server.url)
    yield page
    page.close()


@pytest.fixture
def logged_in(page, live_server, django_user_model):
    django_user_model.objects.create_user(username="member", password="a-long-test-password")
    log_in(page, live_server.url, "member", "a-long-test-password")
    return page
