"""A run's pages: live progress and cancel, the report, its files, the files its cases
attach, and comparing two runs (the answers browser is runs/views/answers.py, the pairs
runs/views/pairs.py).

Every list is paginated and filtered in SQL, and every aggregate comes from the stored report
or one query, so a page never loads every row of a big run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseNotFound
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from evalsite.core.report.case_diff import counts, diff_cases
from evalsite.core.report.compare import compare_reports, regression_points
from evalsite.htmx import HtmxHttpRequest
from runs.forms import DecisionForm
from runs.models import Run
from runs.results.case_diff import run_attempts
from runs.results.media import NO_LOOK_MEDIA, download_name, served_file
from runs.results.progress import progress
from runs.results.report_page import report_page
from runs.results.reporting import REPORT_FILES
from runs.views.browsing import run_or_404

# An attached file is shown by the app's pages, never run in its origin: a sandboxed
# document with no script, whatever the bytes (a PDF's JavaScript, an SVG-like image).
# Any: Django takes True for a directive with no value, which django-stubs' type leaves out.
MEDIA_CSP: dict[str, Any] = {
    "default-src": [CSP.NONE],
    "img-src": [CSP.SELF],
    "media-src": [CSP.SELF],
    "style-src": [CSP.UNSAFE_INLINE],
    "sandbox": True,
}


@require_GET
@vary_on_headers("HX-Request")
def run_detail(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = run_or_404(run_id)
    context: dict[str, Any] = {
        "run": run,
        # a finished run's figures are in its report: no count over its rows
        "snap": progress(run) if run.is_active else None,
        "can_cancel": _can_cancel(request.user, run),
        "can_pin": _owner_or_staff(request.user, run),
        "pinned": run.suite.baseline_run_id == run.id,
        "shown": report_page(run),
    }
    if request.htmx and request.GET.get("part") == "progress":
        # the header's status badge comes along out of band: it follows the phase too
        response = render(request, "runs/run_detail.html#run-progress", context | {"oob": True})
        if not run.is_active:
            response["HX-Refresh"] = "true"  # the run ended: load the page with its report
        return response
    if shown := context["shown"]:
        context["card"], context["report_nav"], context["report_html"] = (
            shown.card, shown.nav, shown.html,
        )  # fmt: skip
        context["files"] = [name for name in REPORT_FILES if (run.report_dir / name).exists()]
    context["decisions"] = run.decisions.select_related("decided_by")
    context["decision_form"] = DecisionForm()
    context["earlier_id"] = (
        Run.objects.for_suite(run.suite)
        .filter(report__isnull=False, created_at__lt=run.created_at)
        .values_list("id", flat=True)
        .first()
    )
    return render(request, "runs/run_detail.html", context)


def _can_cancel(user, run: Run) -> bool:
    return run.is_active and (user.is_staff or run.created_by_id == user.pk)


@require_POST
def run_cancel(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = run_or_404(run_id)
    if not (request.user.is_staff or run.created_by_id == request.user.pk):
        raise PermissionDenied("Only the member who started a run, or staff, can cancel it.")
    if request.POST.get("ask") and run.is_active and not run.cancel_requested:
        return _cancel_question(request, run)
    run.request_cancel()
    if request.htmx:
        context = {"run": run, "snap": progress(run), "shown": report_page(run),
                   "can_cancel": False, "oob": True}  # fmt: skip
        return render(request, "runs/run_detail.html#run-progress", context)
    return redirect("run_detail", run_id=run.id)


def _cancel_question(request: HtmxHttpRequest, run: Run) -> HttpResponse:
    """Cancel's first step: the question, with the button that cancels (no JavaScript
    needed); in place of the progress for htmx, which stops polling while it is asked."""
    context = {"run": run, "snap": progress(run), "shown": report_page(run),
               "can_cancel": True, "ask_cancel": True}  # fmt: skip
    if request.htmx:
        return render(request, "runs/run_detail.html#run-progress", context)
    return render(request, "runs/run_cancel.html", context)


def _owner_or_staff(user, run: Run) -> bool:
    return user.is_staff or run.created_by_id == user.pk


@require_POST
def run_pin(request: HttpRequest, run_id: str) -> HttpResponse:
    """Pin this run as its suite's regression baseline (the `max_regression_points` gate):
    the member who started it, or staff (`evalsite baseline set` is the operator's)."""
    run = run_or_404(run_id)
    if not _owner_or_staff(request.user, run):
        raise PermissionDenied("Only the member who started a run, or staff, can pin it.")
    try:
        run.suite.pin_baseline(run)
    except ValueError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Pinned as the baseline of {run.suite.name}.")
    return redirect("run_detail", run_id=run.id)


@require_GET
def run_file(request: HttpRequest, run_id: str, name: str) -> FileResponse:
    run = run_or_404(run_id)
    if name not in REPORT_FILES or not (run.report_dir / name).is_file():
        raise Http404("No such report file.")
    # Downloaded, never rendered in the app's origin: report.html is opened from disk.
    return FileResponse((run.report_dir / name).open("rb"), as_attachment=True, filename=name)


@require_GET
@csp_override(MEDIA_CSP)
def run_media(request: HttpRequest, run_id: str, sha256: str) -> HttpResponseBase:
    """A file the run's cases attach, by its hash: only one its suite version attaches,
    of a type evalsite sends, and never of a no-look run."""
    run = run_or_404(run_id)
    if run.no_look:
        return HttpResponseNotFound(NO_LOOK_MEDIA, content_type="text/plain")
    media = served_file(run, sha256)
    if media is None:
        return HttpResponseNotFound(
            "This run's cases attach no such file.", content_type="text/plain"
        )
    kind = media.media_type + ("; charset=utf-8" if media.media_type == "text/plain" else "")
    blob = Path(media.source).open("rb")  # noqa: SIM115 - the response closes it
    response = FileResponse(blob, content_type=kind, filename=download_name(media))
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, max-age=86400"  # a hash's bytes never change
    return response


@require_GET
def compare(request: HttpRequest) -> HttpResponse:
    a_id, b_id = request.GET.get("a", ""), request.GET.get("b", "")
    runs = Run.objects.filter(report__isnull=False).named()
    context: dict[str, Any] = {"runs": runs[:100], "a": a_id, "b": b_id}
    if a_id and b_id:
        a = get_object_or_404(runs, pk=a_id)
        b = get_object_or_404(runs, pk=b_id)
        comparison = compare_reports(a.stored_report, b.stored_report)
        comparable = comparison.comparable  # else no case list: it would read as one
        changes = diff_cases(run_attempts(a), run_attempts(b)) if comparable else []
        show = "all" if request.GET.get("show") == "all" else "changes"
        points, points_error = regression_points(request.GET.get("points"))
        checked = [r.to_dict() for r in comparison.regressions(points)]
        context |= {
            "run_a": a,
            "run_b": b,
            "comparison": comparison.to_dict(),
            "points": points,
            "points_error": points_error,
            "regressions": checked,
            "regressed": [r for r in checked if r["regressed"]],
            "cases": [c for c in changes if show == "all" or c.status != "same"],
            "case_counts": counts(changes),
            "show": show,
        }
    return render(request, "runs/compare.html", context)
