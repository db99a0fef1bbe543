"""The decision log: a decision recorded on a run's page, the list, and DECISIONS.md."""

from __future__ import annotations

import re

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from evalsite.core.report.text import md_code, md_literal
from evalsite.htmx import HtmxHttpRequest
from runs.forms import DecisionForm
from runs.models import Decision, Run

_BACKTICKS = re.compile(r"`+")


@require_POST
def decision_new(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    if run.is_active:
        return _refused(request, run)
    form = DecisionForm(request.POST)
    if form.is_valid():
        form.save_once(run, request.user)  # a second post of the same form stores nothing
        if request.htmx:
            context = {"run": run, "decisions": run.decisions.select_related("decided_by"),
                       "decision_form": DecisionForm()}  # fmt: skip
            return render(request, "runs/run_detail.html#run-decisions", context)
        return redirect(f"/runs/{run.id}/#decisions")
    context = {"run": run, "decisions": run.decisions.all(), "decision_form": form}
    status = 422 if request.htmx else 400
    template = "runs/run_detail.html#run-decisions" if request.htmx else "runs/decision_form.html"
    return render(request, template, context, status=status)


def _refused(request: HtmxHttpRequest, run: Run) -> HttpResponse:
    """409: a decision is about a finished run's figures, and this one is still going."""
    refusal = (
        f"Run {run.id} has not finished (it is {run.status_label.lower()}): no decision was "
        "recorded. Record one once it has finished."
    )
    context = {"run": run, "decisions": run.decisions.all(), "refusal": refusal}
    template = "runs/run_detail.html#run-decisions" if request.htmx else "runs/decision_form.html"
    return render(request, template, context, status=409)


@require_GET
def decision_list(request: HttpRequest) -> HttpResponse:
    decisions = Decision.objects.select_related("run__suite_version__suite", "decided_by")
    return render(request, "runs/decision_list.html", {"decisions": decisions[:500]})


@require_GET
def decisions_markdown(request: HttpRequest) -> HttpResponse:
    decisions = Decision.objects.select_related("run__suite_version__suite", "decided_by")
    lines = ["# Decisions", ""]
    for decision in decisions:
        who = md_code(decision.decided_by.get_username()) if decision.decided_by else None
        run = decision.run
        contestants = ", ".join(md_code(name) for name in run.contestants)
        lines += [
            f"## {decision.created_at:%Y-%m-%d %H:%M} — {decision.get_verdict_display()}",
            "",
            f"- Run: {md_code(run.id)} ({md_code(run.suite.name)}; {contestants})",
            f"- Decided by: {who or '(deleted user)'}",
            f"- Headline eligible: {_eligible(run)}",
            "",
            *_quoted(decision.reasoning),
            "",
        ]
    response = HttpResponse("\n".join(lines), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="DECISIONS.md"'
    return response


def _eligible(run: Run) -> str:
    if not run.report:
        return "no report"
    calibration = run.report["calibration"]
    return "yes" if run.report["headline_eligible"] else f"no ({calibration['status']})"


def _quoted(text: str) -> list[str]:
    """The reasoning as a fenced block inside a block quote, each line through md_literal as
    in report.md's fenced blocks: shown as written, never read as Markdown or HTML."""
    literal = [md_literal(line) for line in text.strip().splitlines()]
    longest = max((len(ticks) for line in literal for ticks in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"> {line}".rstrip() for line in (f"{fence}text", *literal, fence)]
