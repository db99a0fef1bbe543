"""The calibration page shows kappa's interval over cases beside the floor (issue 27): the
same figure the report's calibration has (`kappa_ci`, what the gate reads), and the
per-task kappa list with its Holm-corrected verdict against the floor."""

from __future__ import annotations

import pytest
from django.test import Client

from runs.results.calibration import suite_calibration
from tests.helpers.factories import make_judged_run, make_suite_version, make_user
from tests.results.test_calibration_edges import agreeing, labelled_suite


def _page(name: str) -> str:
    client = Client()
    client.force_login(make_user())
    return client.get(f"/suites/{name}/calibration/").content.decode()


def _floor(page: str) -> str:
    return page.split("<dt>Floor</dt><dd>", 1)[1].split("</dd>", 1)[0]


@pytest.mark.django_db
def test_the_floor_line_shows_kappas_interval_over_cases_as_the_report_has_it():
    version = make_suite_version(labelled_suite(14))
    scores = agreeing(14) | {("greet", "c1"): 1.0, ("greet", "c2"): 0.0}  # two disagree
    run = make_judged_run(scores, suite_version=version)
    calibration = suite_calibration(version.suite, run)
    low, high = calibration["kappa_ci"]
    assert calibration["kappa_cases"] == 14 and low < calibration["kappa"] < high

    page = _page(version.suite.name)
    floor = _floor(page)
    assert "kappa 0.40 over at least 10 labels" in floor
    assert f"95% interval of kappa over cases [{low:.2f}, {high:.2f}] (14 cases)" in floor
    # the one task: its kappa tested against the floor, its interval the same figure
    assert "below the floor of 0.40? 1 comparison, Holm-corrected" in page
    assert f"[{low:.2f}, {high:.2f}]</td>" in page.split("Per task", 1)[1]


@pytest.mark.django_db
def test_without_an_interval_the_floor_line_says_why():
    version = make_suite_version(labelled_suite(1))
    run = make_judged_run(agreeing(1), suite_version=version)
    assert suite_calibration(version.suite, run)["kappa_ci"] is None
    floor = _floor(_page(version.suite.name))
    assert "no interval (" in floor
