"""The decision form in Chromium: no verdict is chosen for the member, the browser asks for
one before anything is sent, and a reload after recording it stores nothing more."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from runs.models import Decision, Run
from tests.helpers.factories import make_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_decision_needs_a_chosen_verdict_and_is_stored_once(logged_in, live_server):
    page = logged_in
    run = make_run(status=Run.Status.DONE)
    page.goto(f"{live_server.url}/runs/{run.id}/")
    form = page.locator("#run-decisions form")
    radios = form.locator('input[type="radio"]')
    expect(radios).to_have_count(3)
    assert not any(radios.nth(i).is_checked() for i in range(3))

    form.get_by_label("Reasoning").fill("wins on every task")
    form.get_by_role("button", name="Record decision").click()
    assert radios.first.evaluate("e => !e.validity.valid")  # the browser asks for a verdict
    assert not Decision.objects.exists()

    form.get_by_label("adopt").check()
    form.get_by_role("button", name="Record decision").click()
    expect(page.locator("#run-decisions article.decision")).to_have_count(1)
    page.reload()
    page.locator("#run-decisions form").get_by_label("adopt").check()
    page.locator("#run-decisions form").get_by_label("Reasoning").fill("wins on every task")
    page.locator("#run-decisions form").get_by_role("button", name="Record decision").click()
    expect(page.locator("#run-decisions article.decision")).to_have_count(1)
    assert Decision.objects.count() == 1
    assert page.watch.problems == []
