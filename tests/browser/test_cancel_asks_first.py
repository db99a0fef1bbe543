"""Cancel run in Chromium: the button asks first, the question stays while the page would
otherwise poll, "keep it running" puts the button back, and only "Yes" cancels."""

from __future__ import annotations

import contextlib

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from runs.models import Run
from tests.helpers.factories import make_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_cancel_run_asks_before_it_cancels(logged_in, live_server):
    page = logged_in
    owner = get_user_model().objects.get(username="member")
    run = make_run(status=Run.Status.RUNNING, created_by=owner)
    page.goto(f"{live_server.url}/runs/{run.id}/")
    progress = page.locator("#run-progress")

    progress.get_by_role("button", name="Cancel run…").click()
    expect(progress).to_contain_text("Cancel this run?")
    page.wait_for_timeout(2_500)  # longer than the 1 s poll: the question is not swapped away
    expect(progress).to_contain_text("Cancel this run?")
    assert not Run.objects.get(pk=run.pk).cancel_requested

    progress.get_by_role("link", name="No, keep it running").click()
    expect(progress.get_by_role("button", name="Cancel run…")).to_be_visible()
    assert not Run.objects.get(pk=run.pk).cancel_requested

    progress.get_by_role("button", name="Cancel run…").click()
    progress.get_by_role("button", name="Yes, cancel the run").click()
    expect(progress).to_contain_text("Cancelling: calls in flight finish")
    expect(page.locator("#run-status")).to_have_text("Cancelling")
    assert Run.objects.get(pk=run.pk).cancel_requested
    assert page.watch.problems == []


def test_a_poll_in_flight_when_cancel_is_clicked_is_dropped_without_an_error(
    logged_in, live_server
):
    """A poll still in flight when "Cancel run…" replaced the progress used to be swapped in
    afterwards from its detached section: htmx found no `#run-status` for its out-of-band
    badge there ("htmx:oobErrorNoTarget" in the console, seen under load). A response whose
    target left the page is now dropped (static/js/app.js)."""
    page = logged_in
    owner = get_user_model().objects.get(username="member")
    run = make_run(status=Run.Status.RUNNING, created_by=owner)
    held = []
    page.route("**/?part=progress", lambda route: held.append(route))  # each poll waits here
    page.goto(f"{live_server.url}/runs/{run.id}/")
    progress = page.locator("#run-progress")
    while not held:
        page.wait_for_timeout(100)

    progress.get_by_role("button", name="Cancel run…").click()
    expect(progress).to_contain_text("Cancel this run?")
    page.unroute("**/?part=progress")
    for route in held:
        with contextlib.suppress(PlaywrightError):  # an aborted request has no route left
            route.continue_()
    page.wait_for_timeout(300)
    expect(progress).to_contain_text("Cancel this run?")
    progress.get_by_role("button", name="Yes, cancel the run").click()
    expect(page.locator("#run-status")).to_have_text("Cancelling")
    assert page.watch.problems == []
