"""The dashboard: the one page that shows every app's state (suites, runs, labels)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from labels.queue import queue_count
from runs.models import Run, Suite, SuiteVersion
from runs.results.calibration import suite_calibration
from runs.setup import DEMO_FIRST_RUN


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    rows = []
    for suite in Suite.objects.team().prefetch_related("versions"):
        versions = suite.versions.all()
        rows.append(
            (suite, versions[0] if versions else None, suite_calibration(suite, brief=True))
        )
    recent = list(Run.objects.not_lab().named()[:10])
    context = {
        "rows": rows,
        "runs": recent,
        "first_run": None if recent else _first_run_suite(rows),
        "queue": queue_count(request.user),
    }
    return render(request, "runs/dashboard.html", context)


def _first_run_suite(rows) -> FirstRun | None:
    """The run form the empty dashboard offers: the demo suite's, preset to its offline
    first run (scripted answers and judge: no key, real-looking answers); else the first
    listed suite's, with its own contestants."""
    suites = [suite for suite, version, _ in rows if version is not None]
    demo = [s for s in suites if SuiteVersion.Origin.DEMO in {v.origin for v in s.versions.all()}]
    if demo:
        return FirstRun(demo[0], "?" + urlencode(DEMO_FIRST_RUN), offline=True)
    return FirstRun(suites[0], "", offline=False) if suites else None


@dataclass(frozen=True)
class FirstRun:
    suite: Suite
    query: str  # the new-run form's preset, as the suite page reads it
    offline: bool
