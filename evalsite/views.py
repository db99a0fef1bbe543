"""The dashboard: the one page that shows every app's state (suites, runs, labels)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from labels.queue import queue_count
from runs.calibration import suite_calibration
from runs.models import Run, Suite, SuiteVersion


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    rows = []
    for suite in Suite.objects.team().prefetch_related("versions"):
        versions = suite.versions.all()
        rows.append(
            (suite, versions[0] if versions else None, suite_calibration(suite, brief=True))
        )
    runs = Run.objects.not_lab().select_related("suite_version__suite")
    recent = list(runs.defer("report", "estimate")[:10])
    context = {
        "rows": rows,
        "runs": recent,
        "first_run": None if recent else _first_run_suite(rows),
        "queue": queue_count(request.user),
    }
    return render(request, "runs/dashboard.html", context)


def _first_run_suite(rows) -> Suite | None:
    """The suite whose run form the empty dashboard offers: the demo suite, else the
    first suite listed."""
    suites = [suite for suite, version, _ in rows if version is not None]
    demo = [s for s in suites if SuiteVersion.Origin.DEMO in {v.origin for v in s.versions.all()}]
    return next(iter(demo or suites), None)
