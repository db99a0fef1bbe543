"""Pages for suites, new runs and prices. Views are thin: the core validates, the models
store, the planner plans."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import RequestDataTooBig
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.functional import SimpleLazyObject
from django.utils.http import urlencode
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from evalsite.core.suite_parts import DEFAULT_MIN_KAPPA, DEFAULT_MIN_LABELS
from evalsite.core.suites import Problem, SuiteError, load_suite
from evalsite.htmx import HtmxHttpRequest
from runs.forms import RunForm, SuiteForm
from runs.models import Price, PriceTable, Run, Suite, SuiteVersion
from runs.planning.launch import (
    contestant_choices,
    judge_choices,
    launch,
    missing_keys_message,
    plan_from_form,
)
from runs.planning.planner import PlanError
from runs.planning.validation import BUSY, member_validation
from runs.results.across import across_runs
from runs.results.calibration import suite_calibration
from runs.suite_files import suite_files


@require_GET
def suite_list(request: HttpRequest) -> HttpResponse:
    suites = Suite.objects.team().prefetch_related("versions")
    registered = {v.source_path for v in SuiteVersion.objects.only("source_path")}
    files = [f for f in suite_files() if str(f) not in registered]
    return render(request, "runs/suite_list.html", {"suites": suites, "files": files})


@csrf_exempt  # checked by _suite_new, once the body could be read at all
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def suite_new(request: HtmxHttpRequest) -> HttpResponse:
    """Paste or upload a suite. A paste over Django's request limit is never read, not even
    for its CSRF token, so it gets the size message here, and nothing is stored."""
    try:
        form = SuiteForm(request.POST or None, request.FILES or None)
    except RequestDataTooBig:
        return _suite_new_page(request, SuiteForm.too_big(_sent_bytes(request)), status=413)
    if request.method != "POST":
        return _suite_new(request, form)
    with member_validation() as free:
        return _suite_new(request, form) if free else _busy_page(request)


@csrf_protect
def _suite_new(request: HtmxHttpRequest, form: SuiteForm) -> HttpResponse:
    if request.method == "POST" and form.is_valid() and form.wants_registration:
        version, created = form.register(request.user)
        note = "Registered a new version of" if created else "Already registered:"
        messages.success(request, f"{note} {version.suite.name} ({version.short_hash}).")
        if form.translation is not None and form.translation.untranslated:
            count = len(form.translation.untranslated)
            parts = f"{count} part{'s' if count > 1 else ''}"
            messages.warning(request, f"{parts} of the file did not translate: see its YAML's top.")
        return redirect("suite_detail", name=version.suite.name)
    if form.translation is not None and not request.htmx:  # another tool's file: preview first
        return _suite_new_page(request, form.preview())
    return _suite_new_page(request, form)


def _suite_new_page(request: HtmxHttpRequest, form: SuiteForm, status: int = 200) -> HttpResponse:
    if request.htmx:  # htmx swaps only a 2xx response in: the problems are shown either way
        return render(request, "runs/suite_new.html#suite-problems", {"form": form})
    return render(request, "runs/suite_new.html", {"form": form}, status=status)


def _busy_page(request: HtmxHttpRequest) -> HttpResponse:
    """Every validation slot is taken: said at once (htmx shows it as it shows problems),
    with the pasted text kept in the editor."""
    form = SuiteForm(initial={"yaml_text": request.POST.get("yaml_text", "")})
    form.problems = [Problem(form.source_name, None, "", BUSY)]
    response = _suite_new_page(request, form, status=503)
    response["Retry-After"] = "2"
    return response


def _sent_bytes(request: HttpRequest) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


@require_POST
def suite_register_file(request: HttpRequest) -> HttpResponse:
    """Register a suite from the configured suites directory (python checks allowed)."""
    wanted = request.POST.get("path", "")
    path = next((f for f in suite_files() if str(f) == wanted), None)
    if path is None:
        raise Http404("No such suite file in the suites directory.")
    try:
        loaded = load_suite(path)
    except SuiteError as exc:
        for problem in exc.problems[:20]:
            messages.error(request, str(problem))
        return redirect("suite_list")
    version, _ = SuiteVersion.objects.register_file(path, loaded, user=request.user)
    return redirect("suite_detail", name=version.suite.name)


@require_GET
def suite_detail(request: HttpRequest, name: str) -> HttpResponse:
    suite = get_object_or_404(Suite, name=name)
    versions = suite.versions.select_related("created_by").defer(*SuiteVersion.DOCUMENT)
    wanted = request.GET.get("version", "")
    version = next((v for v in versions if v.sha256.startswith(wanted)), None) if wanted else None
    version = version or versions.first()
    if version is None:
        raise Http404("This suite has no versions.")
    if problems := _unreadable(version):
        return _unreadable_page(request, suite, version, problems, status=200)
    form = _run_form(version, preset=request.GET)
    context = _suite_context(suite, version, form, page=request.GET.get("page"))
    context["case_query"] = urlencode({"version": wanted}) if wanted else ""
    return render(request, "runs/suite_detail.html", context)


def _suite_context(
    suite: Suite, version: SuiteVersion, form: RunForm | None = None, unreadable=(), page=None
) -> dict:
    """The suite page's context; with the ``unreadable`` version's problems, no run form;
    the cases of ``page`` (a number from ``?page=``; the first when it is not one)."""
    return {
        "suite": suite,
        "badge": suite_calibration(suite, brief=True),  # the dashboard's badge, in its words
        "version": version,
        "versions": suite.versions.select_related("created_by").defer(*SuiteVersion.DOCUMENT),
        "parsed": version.document,
        "default_floor": {
            "min_kappa": f"{DEFAULT_MIN_KAPPA:.2f}",
            "min_labels": DEFAULT_MIN_LABELS,
        },
        "runs": Run.objects.for_suite(suite).named()[:20],
        "run_form": None if unreadable else form or _run_form(version),
        "unreadable": unreadable,
        # lazy: the estimate's htmx fragment renders neither
        "across": SimpleLazyObject(lambda: across_runs(suite)),
        "cases": SimpleLazyObject(lambda: _case_page(version, page)),
    }


CASES_PER_PAGE = 50


def _case_page(version: SuiteVersion, number) -> Page:
    """One page of the version's cases, each with its task's id: the page shows these
    only (a suite of thousands of cases was tens of thousands of pixels long)."""
    rows = [
        (task["id"], case)
        for task in version.document.get("tasks") or ()
        for case in task.get("cases") or ()
    ]
    return Paginator(rows, CASES_PER_PAGE).get_page(number)


def _unreadable(version: SuiteVersion) -> list[Problem]:
    """What is wrong with a stored version that no longer reads (its row was edited in the
    database); empty when it reads."""
    try:
        version.core_suite()
    except SuiteError as error:
        return list(error.problems)
    return []


def _unreadable_page(
    request: HttpRequest, suite: Suite, version: SuiteVersion, problems: list[Problem], status: int
) -> HttpResponse:
    """The suite's page without a new-run form: the version's problems instead."""
    context = _suite_context(suite, version, unreadable=problems)
    return render(request, "runs/suite_detail.html", context, status=status)


def _run_form(version: SuiteVersion, data=None, files=None, preset=None) -> RunForm:
    """The new-run form, bound to `data`; unbound, with the suite's contestants ticked, or
    those a link gives (`?models=a,b&judge=j`: the dashboard's first run) when each of them
    is one of the form's choices."""
    choices, judges = contestant_choices(version), judge_choices(version)
    defaults, judge = list(version.document.get("models") or []), ""
    linked = [m.strip() for m in (preset or {}).get("models", "").split(",") if m.strip()]
    if len(linked) >= 2 and set(linked) <= set(choices):
        defaults = linked
        judge = (preset or {}).get("judge", "").strip()
        judge = judge if judge in judges else ""
    form = RunForm(data, files, choices=choices, defaults=defaults, judges=judges)
    if judge:
        form.fields["judge"].initial = judge
    return form


def _version_or_404(name: str, sha: str) -> tuple[Suite, SuiteVersion]:
    suite = get_object_or_404(Suite, name=name)
    return suite, get_object_or_404(SuiteVersion, suite=suite, sha256=sha)


@require_POST
@vary_on_headers("HX-Request")
def run_estimate(request: HtmxHttpRequest, name: str, sha: str) -> HttpResponse:
    """The live estimate as the new-run form changes (htmx), or the page with it."""
    suite, version = _version_or_404(name, sha)
    if problems := _unreadable(version):
        return _unreadable_page(request, suite, version, problems, status=400)
    form = _run_form(version, request.POST, request.FILES)
    context = _suite_context(suite, version, form) | _estimate(form, version)
    template = "runs/suite_detail.html" + ("#run-estimate" if request.htmx else "")
    return render(request, template, context)


@require_POST
def run_new(request: HttpRequest, name: str, sha: str) -> HttpResponse:
    """Launch: plan as `evalsite run` does, store, queue for the workers, show the run.
    Anything the planner refuses, or a key the server lacks, shows the form again."""
    suite, version = _version_or_404(name, sha)
    if problems := _unreadable(version):
        return _unreadable_page(request, suite, version, problems, status=400)
    form = _run_form(version, request.POST, request.FILES)
    result = _estimate(form, version)
    if result["plan"] is None or result["missing_keys"]:
        context = _suite_context(suite, version, form) | result
        return render(request, "runs/suite_detail.html", context, status=400)
    token = form.cleaned_data["form_token"]
    run, stored = launch(result["plan"], user=request.user, form_nonce=token.nonce if token else "")
    if not stored:
        messages.info(request, "This form had already launched this run; nothing new was started.")
    elif run.status == Run.Status.REFUSED:
        messages.error(request, run.detail)
    return redirect("run_detail", run_id=run.id)


def _estimate(form: RunForm, version: SuiteVersion) -> dict:
    """The plan and its estimate; or why there is none: the form's problems (`invalid`),
    or the planner's refusal. Either way the form's invalid inputs are marked, the first
    one focused; with none of them to fix, the launch button takes the focus (`refused`)."""
    if not form.is_valid():
        form.mark_invalid()
        return {"plan": None, "plan_error": "", "missing_keys": "", "invalid": True}
    try:
        plan = plan_from_form(version, form.cleaned_data)
    except PlanError as error:
        return {"plan": None, "plan_error": str(error), "missing_keys": "", "refused": True}
    missing_keys = missing_keys_message(plan)
    return {
        "plan": plan,
        "estimate": plan.estimate,
        "cap": plan.cap,
        "over_cap": plan.over_cap,
        "missing_keys": missing_keys,
        "refused": bool(missing_keys),
    }


@require_GET
def prices(request: HttpRequest) -> HttpResponse:
    tables = PriceTable.objects.all()
    name = request.GET.get("table", "")
    table = tables.filter(name=name).first() if name else tables.active()
    rows = table.prices.all() if table else Price.objects.none()
    provider = request.GET.get("provider", "")
    if provider and table:
        rows = rows.filter(model__startswith=f"{provider}/")
    providers = (
        sorted({m.split("/", 1)[0] for m in table.prices.values_list("model", flat=True)})
        if table
        else []
    )
    context = {
        "tables": tables,
        "table": table,
        "rows": rows,
        "provider": provider,
        "providers": providers,
        "suites_dir": settings.SUITES_DIR,
    }
    return render(request, "runs/prices.html", context)
