"""A run's name: a member renames its label from the run page (inline with htmx, or a plain
form post), by the rule the CLI's `--label` follows (:meth:`~runs.models.Run.rename`)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from evalsite.htmx import HtmxHttpRequest
from runs.models import Run


@require_POST
def run_rename(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("suite_version__suite"), pk=run_id)
    label = request.POST.get("label", "")
    error = ""
    try:
        run.rename(label)
    except ValueError as problem:
        error = f"Label: {problem}"
    if request.htmx:
        context = {"run": run, "label_value": label, "label_error": error, "renamed": not error}
        return render(request, "runs/run_label.html", context)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, f"Renamed to {run.display_name}.")
    return redirect("run_detail", run_id=run.id)
