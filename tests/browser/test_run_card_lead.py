"""In Chromium at 1280×800 a matrix run's page opens on its matrix score: the card's key
figure is in the first screen, before any win-rate wording."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from runs.models import Run
from tests.core.report.test_matrix import hand_counted
from tests.helpers.factories import make_run

pytestmark = pytest.mark.django_db(transaction=True)
WIDTH, HEIGHT = 1280, 800


def test_a_matrix_run_opens_on_its_matrix_score(logged_in, live_server):
    page = logged_in
    report = hand_counted()
    run = make_run(status=Run.Status.DONE, contestants=report["contestants"], report=report,
                   judge={})  # fmt: skip
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})

    page.goto(f"{live_server.url}/runs/{run.id}/")

    expect(page.locator("#summary-title")).to_have_text("Matrix score")
    figure = page.locator("#summary .key-figure")
    expect(figure).to_have_text("1.000")
    expect(figure).to_be_in_viewport()
    assert figure.bounding_box()["y"] + figure.bounding_box()["height"] <= HEIGHT
    expect(page.locator("#summary")).not_to_contain_text("UNCALIBRATED")
    assert page.watch.problems == []
