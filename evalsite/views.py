"""The dashboard: the one page that shows every app's state (suites, runs, labels)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from labels.queue import queue_count
from runs.calibration import suite_calibration
from runs.models import Run, Suite


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    rows = []
    for suite in Suite.objects.team().prefetch_related("versions"):
        versions = suite.versions.all()
        rows.append(
            (suite, versions[0] if versions else None, suite_calibration(suite, brief=True))
        )
    runs = Run.objects.not_lab().select_related("suite_version__suite")
    context = {
        "rows": rows,
        "runs": runs.defer("report", "estimate")[:10],
        "queue": queue_count(request.user),
    }
    return render(request, "runs/dashboard.html", context)
