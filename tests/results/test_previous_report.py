"""The report a run is compared with (reporting.previous_report): the latest earlier
finished run of the same suite with the same baseline and a candidate in common."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from runs.models import Run
from runs.results.reporting import previous_report
from tests.helpers.factories import make_run, make_suite_version, small_suite_text


def _finished(version, minutes_ago: int, contestants: list[str], **overrides) -> Run:
    run = make_run(
        suite_version=version,
        contestants=contestants,
        status=overrides.pop("status", Run.Status.DONE),
        report=overrides.pop("report", {"run": minutes_ago}),
        **overrides,
    )
    Run.objects.filter(pk=run.pk).update(
        created_at=timezone.now() - dt.timedelta(minutes=minutes_ago)
    )
    run.refresh_from_db()
    return run


@pytest.mark.django_db
def test_the_latest_earlier_finished_run_with_the_baseline_and_a_candidate_in_common():
    version = make_suite_version()
    pair = ["fake/small", "fake/large"]
    _finished(version, 50, pair)
    wanted = _finished(version, 40, ["fake/small", "fake/medium", "fake/large"])
    _finished(version, 30, ["fake/large", "fake/small"])  # another baseline
    _finished(version, 20, ["fake/small", "fake/medium"])  # no candidate in common
    _finished(version, 15, pair, status=Run.Status.CANCELLED)  # not finished as done
    _finished(version, 12, pair, report=None)  # no report
    _finished(make_suite_version(small_suite_text("other")), 11, pair)  # another suite
    run = _finished(version, 10, pair)
    _finished(version, 5, pair)  # later

    assert previous_report(run) == wanted.report == {"run": 40}


@pytest.mark.django_db
def test_none_without_an_earlier_run_to_compare_with():
    version = make_suite_version()
    run = _finished(version, 10, ["fake/small", "fake/large"])
    _finished(version, 20, ["fake/large", "fake/small"])

    assert previous_report(run) is None
