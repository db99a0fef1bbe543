"""The judge lab's pages (SPEC §10.5): pair sets (upload to import), and one pair set's
judges side by side with the form that starts a judge run. The workflow is in
:mod:`lab.transfer` and :mod:`lab.judges`; these views only read the forms and render."""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from evalsite.core.input_limits import MAX_BYTES, size_message
from evalsite.core.problems import Problem
from evalsite.htmx import HtmxHttpRequest
from lab.judges import JudgeConfig, LabError, lab_report, launch_judge_run, plan_judge_run
from lab.models import PairSet
from lab.transfer import import_pairset
from runs.forms import CapField, FormTokenField
from runs.models import NoActivePriceTable, PriceTable, Run

MAX_WARNINGS_SHOWN = 10


class PairSetForm(forms.Form):
    file = forms.FileField(label="Pair set file (JSONL, one pair a line)", allow_empty_file=True)
    name = forms.CharField(required=False, max_length=60, label="Name (default: the file's name)")


class JudgeRunForm(forms.Form):
    model = forms.CharField(max_length=300, label="Judge model")
    rubric = forms.CharField(
        required=False, strip=False, label="Rubric (optional)",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
    )  # fmt: skip
    fake = forms.BooleanField(required=False, label="Fake judge (offline, simulated cost)")
    max_cost = CapField(label="Cap (USD, default 2.00)")
    form_token = FormTokenField()


@require_http_methods(["GET", "POST"])
def lab_list(request: HttpRequest) -> HttpResponse:
    form = PairSetForm(request.POST or None, request.FILES or None)
    problems: list[Problem] = []
    if request.method == "POST" and form.is_valid():
        pairset, problems = _import(request, form.cleaned_data)
        if pairset is not None:
            return redirect("lab_detail", name=pairset.name)
    context = {"pairsets": PairSet.objects.with_counts(), "form": form, "problems": problems}
    status = 400 if request.method == "POST" else 200
    return render(request, "lab/lab_list.html", context, status=status)


def _import(request: HttpRequest, data: dict) -> tuple[PairSet | None, list[Problem]]:
    upload = data["file"]
    if upload.size > MAX_BYTES:
        return None, [Problem(upload.name, None, "", size_message(upload.size))]
    try:
        pairset, warnings = import_pairset(
            upload.read(), filename=upload.name, name=data["name"] or None, user=request.user
        )
    except LabError as error:
        return None, _problems(error, upload.name)
    messages.success(request, f"Imported {pairset.items.count()} pairs as {pairset.name}.")
    for warning in warnings[:MAX_WARNINGS_SHOWN]:
        messages.warning(request, str(warning))
    if len(warnings) > MAX_WARNINGS_SHOWN:
        messages.warning(request, f"… and {len(warnings) - MAX_WARNINGS_SHOWN} more warnings.")
    return pairset, []


@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def lab_detail(request: HtmxHttpRequest, name: str) -> HttpResponse:
    pairset = get_object_or_404(PairSet, name=name)
    form = JudgeRunForm(request.POST or None)
    problems: list[Problem] = []
    if request.method == "POST" and form.is_valid():
        problems = _start(request, pairset, form.cleaned_data)
        if not problems:
            return redirect("lab_detail", name=pairset.name)
    template = "lab/lab_detail.html"
    if request.htmx and request.method == "GET":
        template += "#lab-figures"
    status = 400 if request.method == "POST" else 200
    context = _detail(pairset) | {"form": form, "problems": problems}
    return render(request, template, context, status=status)


def _start(request: HttpRequest, pairset: PairSet, data: dict) -> list[Problem]:
    """Plan and launch a judge run (as the new-run form launches one); the problems that
    stopped it, else []."""
    rubric = (data["rubric"] or "").replace("\r\n", "\n")  # as a file would hold it
    config = JudgeConfig(
        model=data["model"], rubric=rubric, fake=data["fake"], max_cost=data["max_cost"]
    )
    nonce = data["form_token"].nonce if data["form_token"] else ""
    try:
        lab = plan_judge_run(pairset, config)
        run, started = launch_judge_run(lab, user=request.user, form_nonce=nonce)
    except LabError as error:
        return _problems(error, config.model)
    if started:
        messages.success(request, f"Started run {run.id}: the figures appear here when it is done.")
    else:
        messages.info(request, "This form had already started this run; nothing new was started.")
    return []


def _detail(pairset: PairSet) -> dict:
    runs = pairset.judge_runs.select_related("run")
    return {
        "pairset": pairset,
        "report": lab_report(pairset),
        "lab_runs": runs[:20],
        "active": runs.filter(run__status__in=Run.ACTIVE).exists(),
        "models": _priced_models(),
    }


def _priced_models() -> list[str]:
    try:
        return list(PriceTable.objects.current().prices.values_list("model", flat=True))
    except NoActivePriceTable:
        return []


def _problems(error: LabError, source: str) -> list[Problem]:
    return [p if isinstance(p, Problem) else Problem(source, None, "", p) for p in error.problems]


@require_GET
def lab_report_json(request: HttpRequest, name: str) -> HttpResponse:
    """The figures as ``evalsite pairs report NAME --json`` prints them."""
    report = lab_report(get_object_or_404(PairSet, name=name))
    response = HttpResponse(
        json.dumps(report, indent=2, ensure_ascii=False), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="{name}-lab.json"'
    return response
