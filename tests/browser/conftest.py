"""Playwright driving Debian's Chromium (/usr/bin/chromium) against pytest-django's live server."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, PageWatch, log_in


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
