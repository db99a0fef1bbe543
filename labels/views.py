"""Blind labelling (SPEC §10.2–10.4), the calibration page, and labels in and out as YAML.

The labelling page shows one pair at a time as Left / Right with the task and both answers'
schema and execution-check badges, and nothing else: no model, contestant, verdict, cost,
latency or id. One POST records the label (or skips, or undoes the last one) and returns the
next pair, the progress and the suite's live calibration in one htmx swap; without
JavaScript the same form posts and redirects.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from evalsite.core.calibration import SUITE_FILE
from evalsite.core.judging import pair_rubric, task_text
from evalsite.core.no_look import NO_LABELS
from evalsite.core.report.charts import confusion_svg, kappa_curve_svg
from evalsite.core.report.judge_text import corrected_text, kappa_more_text
from evalsite.htmx import AuthenticatedHtmxRequest, AuthenticatedHttpRequest
from lab.judges import LabError
from lab.transfer import import_suite_pairs
from labels import queue
from labels.transfer import LabelImportError, export_yaml, import_yaml
from runs.models import Label, Run, Suite
from runs.results.calibration import calibration_of, suite_calibration
from runs.results.media import case_files

MODES = (queue.SAMPLE, queue.TARGETED)
SAID = {"left": "left better", "tie": "tie", "right": "right better"}  # a choice, in words


@require_GET
def label_home(request: HttpRequest) -> HttpResponse:
    suites = [
        (suite, len(queue.waiting(suite, request.user)), Run.objects.calibration_run(suite))
        for suite in Suite.objects.team()
    ]
    return render(request, "labels/home.html", {"suites": suites})


@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def label_pair(request: AuthenticatedHtmxRequest, name: str) -> HttpResponse:
    suite = get_object_or_404(Suite, name=name)
    refusal = _no_look_refusal(request, suite)
    if refusal is not None:
        return refusal
    mode = request.POST.get("mode") or request.GET.get("mode") or queue.SAMPLE
    if mode not in MODES:
        raise Http404("No such labelling mode.")
    offer = None
    if request.method == "POST":
        offer = _act(request, suite, mode)
        if not request.htmx:
            query = {"mode": mode, "token": offer.token if offer else None}
            query["run"] = request.POST.get("run") or None
            shown = urlencode({key: value for key, value in query.items() if value})
            return redirect(f"{reverse('label_pair', args=[suite.name])}?{shown}")
    elif request.GET.get("token"):
        offer = _offer_from_token(request, request.GET["token"])
    run = _chosen_run(request, suite)
    labels = queue.label_rows(suite)  # read once for the offer and the progress
    if offer is None:
        offer = queue.next_offer(suite, request.user, mode, run, labels)
    context = _workspace(request, suite, offer, mode, run, labels)
    template = "labels/label.html" + ("#label-workspace" if request.htmx else "")
    return render(request, template, context)


def _no_look_refusal(request: HttpRequest, suite: Suite) -> HttpResponse | None:
    """403 with the reason when the run picked (`?run=`) is a no-look run."""
    chosen = request.POST.get("run") or request.GET.get("run")
    run = Run.objects.for_suite(suite).filter(pk=chosen, no_look=True).first() if chosen else None
    if run is None:
        return None
    return HttpResponseForbidden(f"Run {run.id}: {NO_LABELS}", content_type="text/plain")


def _act(request: HttpRequest, suite: Suite, mode: str):
    """Record, skip or undo; the offer to show next (None: the queue's next)."""
    action = request.POST.get("action", "label")
    if action == "undo":
        undone = queue.undo_last(suite, request.user, mode)
        if undone is None:
            messages.info(request, "Nothing to undo.")
            return None
        messages.info(request, f"undone: {SAID[undone.choice]}")
        pair = queue.pair_for(undone.assignment) if undone.assignment else None
        return queue.offer(suite, request.user, pair, mode) if pair else None
    try:
        ticket = queue.from_token(request.POST.get("token", ""), request.user)
    except queue.BadToken as error:
        messages.error(request, str(error))
        return None
    assignment = ticket.assignment
    if assignment.suite_id != suite.pk:
        raise PermissionDenied("That pair belongs to another suite.")
    if action == "skip":
        queue.skip(assignment)
    elif request.POST.get("choice") in queue.CHOICES:
        choice = request.POST["choice"]
        note = request.POST.get("note", "")
        queue.record(request.user, assignment, choice, note, ticket.mode, ticket.probability)
        messages.success(request, f"stored: {SAID[queue.CHOICES[choice]]} · u to undo")
    else:
        messages.error(request, "Choose Left (1), Tie (2) or Right (3).")
        return _offer_again(request, assignment, ticket.mode)
    return None


def _offer_again(request, assignment, mode):
    pair = queue.pair_for(assignment)
    return queue.offer(assignment.suite, request.user, pair, mode) if pair else None


def _offer_from_token(request: HttpRequest, token: str):
    try:
        ticket = queue.from_token(token, request.user)
    except queue.BadToken as error:
        messages.error(request, str(error))
        return None
    return _offer_again(request, ticket.assignment, ticket.mode)


def _workspace(
    request: AuthenticatedHtmxRequest, suite: Suite, offer, mode: str, run, labels
) -> dict:
    context = {
        "suite": suite,
        "mode": mode,
        "offer": offer,
        "progress": queue.progress(suite, request.user, mode, run, labels),
        "calibration": suite_calibration(suite, run, brief=True) if run else None,
        "run": run,
        "chosen": request.POST.get("run") or request.GET.get("run") or "",
        "choices": [] if request.htmx else _choices(suite),
    }
    if offer is None:
        return context | {"why": queue.why_empty(suite, request.user, mode, run)}
    pair = offer.pair
    sides = [pair.baseline, pair.candidate]
    if not offer.baseline_left:
        sides.reverse()
    mine = Label.objects.filter(
        labeller=request.user, suite=suite, **queue.content_of(offer.assignment)
    ).first()
    # the queue's run is already loaded (without its report); a pair from an older run (a
    # changed label) is not
    if run is not None and pair.run_id == run.id:
        pair.run = run
    version = pair.run.suite_version
    # what each side was sent (its variant's prompt), as the judge is shown it: once when
    # the two are the same, above each answer when they are not (docs/judging.md)
    core = version.core_suite()
    prompts = [task_text(core, pair.task_id, pair.case_id, side.contestant) for side in sides]
    apart = prompts[0] != prompts[1]
    context |= {
        "guide": _guide(core, pair.task_id, pair.case_id),
        "task": "" if apart else prompts[0],
        "files": case_files(pair.run, pair.task_id, pair.case_id),  # the case's, not a side's
        "left": _blind(sides[0]) | {"prompt": prompts[0] if apart else ""},
        "right": _blind(sides[1]) | {"prompt": prompts[1] if apart else ""},
        "mine": queue.seen_as(mine.prefer, offer.baseline_left) if mine else None,
        "note": mine.note if mine else "",
    }
    return context


def _guide(core, task_id: str, case_id: str) -> dict[str, str]:
    """What the member labels by: the suite's labelling guidelines, else the judge's rubric
    for the task, rendered for the case as the judge read it (neither names a model, so the
    page stays blind)."""
    if core.guidelines:
        return {"title": "Labelling guidelines", "text": core.guidelines}
    return {"title": "The judge's rubric", "text": pair_rubric(core, task_id, case_id)}


def _blind(answer) -> dict:
    """Only what the judge also sees: the text and the schema / execution-check verdicts."""
    return {
        "text": answer.text if answer.status == "done" else "",
        "error": answer.status != "done",
        "schema": answer.schema_verdict if answer.schema_verdict != "not_applicable" else "",
        "exec": answer.exec_verdict,
    }


@require_GET
def my_labels(request: AuthenticatedHttpRequest, name: str) -> HttpResponse:
    suite = get_object_or_404(Suite, name=name)
    rows = []
    for label in Label.objects.filter(suite=suite, labeller=request.user).order_by("-updated_at"):
        assignment = queue.Assignment.objects.filter(
            suite=suite, labeller=request.user, **queue.content_of(label)
        ).first()
        pair = queue.pair_for(assignment) if assignment else None
        offer = queue.offer(suite, request.user, pair, label.mode) if pair else None
        rows.append(
            (label, offer, queue.seen_as(label.prefer, offer.baseline_left) if offer else "")
        )
    return render(request, "labels/mine.html", {"suite": suite, "rows": rows[:500]})


@require_GET
def calibration_page(request: HttpRequest, name: str) -> HttpResponse:
    """The suite's calibration. A member sees no one else's label of a pair still waiting
    for them: not in the YAML, nor in the per-labeller and human-human tables (those are
    worked out without such labels); the headline figures count every label. Staff see all."""
    suite = get_object_or_404(Suite, name=name)
    run = _chosen_run(request, suite)
    hidden = _still_to_label(request, suite, run)
    calibration = suite_calibration(suite, run) if run else None
    if run is not None and calibration and hidden:
        calibration |= _tables_as_seen(run, request.user, hidden)
    charts = {"calibration": calibration} if calibration else {}
    context = {
        "suite": suite,
        "calibration": calibration,
        "stopping": _stopping(calibration) if calibration else None,
        "curve_svg": kappa_curve_svg(charts),
        "confusion_svg": confusion_svg(charts),
        "labels_yaml": export_yaml(suite, viewer=request.user, hidden=hidden),
        "hidden": bool(hidden),
        "count": Label.objects.filter(suite=suite).count(),
        "run": run,
        "choices": _choices(suite),
    }
    return render(request, "labels/calibration.html", context)


def _stopping(calibration: dict) -> dict:
    """When to stop labelling, in the report's words: the labels kappa's interval and each
    candidate's corrected win-rate still need, or that there are enough to decide."""
    calibrated = calibration.get("status") == "ok"
    return {
        "kappa": kappa_more_text(calibration),
        "corrected": [
            (candidate, corrected_text({"corrected": figure}, calibrated))
            for candidate, figure in (calibration.get("corrected") or {}).items()
        ],
    }


def _still_to_label(request: HttpRequest, suite: Suite, run: Run | None) -> frozenset:
    """The pairs (content keys) whose other labels this member may not see yet: those still
    waiting for them in the page's run or the suite's calibration run. Staff see every label."""
    if request.user.is_staff:
        return frozenset()
    runs = {shown.pk: shown for shown in (run, Run.objects.calibration_run(suite)) if shown}
    return queue.still_to_label(suite, request.user, list(runs.values()))


def _tables_as_seen(run: Run, user, hidden: frozenset) -> dict:
    """The per-labeller and human-human tables over the labels `user` may see: all but
    other people's labels of the pairs in `hidden` (suite-file labels are in the file)."""
    me = user.get_username()

    def visible(label) -> bool:
        return label.source == SUITE_FILE or label.labeller == me or label.content_key not in hidden

    seen = calibration_of(run, keep=visible)
    return {"labellers": seen["labellers"], "humans": seen["humans"]}


def _chosen_run(request: HttpRequest, suite: Suite) -> Run | None:
    """The suite's calibration run, or the judged run the member picked (`?run=`)."""
    chosen = request.POST.get("run") or request.GET.get("run") or None
    return Run.objects.calibration_run(suite, chosen)


def _choices(suite: Suite) -> list[Run]:
    """The judged runs of the suite a member may calibrate on instead, newest first."""
    runs = Run.objects.for_suite(suite).calibration_choices().named()
    return list(runs.order_by("-created_at")[:50])


@require_POST
def calibration_to_lab(request: HttpRequest, name: str) -> HttpResponse:
    """The suite's labelled pairs as a judge-lab pair set, to compare judges on them."""
    suite = get_object_or_404(Suite, name=name)
    stamp = timezone.now().strftime("%Y%m%d%H%M%S")
    try:
        pairset = import_suite_pairs(suite, name=f"{suite.name[:30]}-labelled-{stamp}",
                                     user=request.user)  # fmt: skip
    except LabError as error:
        for problem in error.problems[:10]:
            messages.error(request, str(problem))
        return redirect("calibration_page", name=suite.name)
    return redirect("lab_detail", name=pairset.name)


@require_GET
def labels_export(request: HttpRequest, name: str) -> HttpResponse:
    """The labels YAML as the calibration page shows it to this member."""
    suite = get_object_or_404(Suite, name=name)
    hidden = _still_to_label(request, suite, _chosen_run(request, suite))
    text = export_yaml(suite, viewer=request.user, hidden=hidden)
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{suite.name}-labels.yaml"'
    return response


@require_POST
def labels_import(request: HttpRequest, name: str) -> HttpResponse:
    suite = get_object_or_404(Suite, name=name)
    upload = request.FILES.get("file")
    text = upload.read().decode("utf-8", "replace") if upload else request.POST.get("yaml", "")
    try:
        created = import_yaml(suite, text, user=request.user, filename="uploaded labels")
    except LabelImportError as error:
        for problem in error.problems[:30]:
            messages.error(request, problem)
    else:
        messages.success(request, f"Imported {created} label{'s' if created != 1 else ''}.")
    return redirect("calibration_page", name=suite.name)
