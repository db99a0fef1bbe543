"""A run's answers browser (``/runs/<id>/answers/``) and its CSV (``answers.csv``, the same
query string): filters (task, case, contestant, verdict), a text or RE2 pattern search, the
failures-only and differs-between-contestants views, a sort, and each answer whole in place
with a link to its pairs and its case.

The filtering is :class:`~runs.models.answer.AnswerQuerySet`'s; a page reads one page of rows
and one query for their pairs, and the CSV streams the filtered rows with the CLI's columns
(:data:`~runs.results.exports.ANSWER_COLUMNS`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from evalsite.core.json_text import JsonTextError, load_json
from evalsite.core.patterns import PatternError
from evalsite.htmx import HtmxHttpRequest
from runs.models import Answer, Pair, Run
from runs.results.exports import ANSWER_COLUMNS, answer_rows, csv_lines
from runs.results.media import CaseFile, files_by_case
from runs.views.browsing import filter_query, filters_of, page_of, run_or_404, task_ids

ANSWER_VERDICTS = {
    "passed": Q(passed=True),
    "failed": Q(passed=False),
    "schema_fail": Q(schema_verdict="schema_fail"),
    "parse_fail": Q(schema_verdict="parse_fail"),
    "check_fail": Q(checks_passed=False),
    "exec_fail": Q(exec_verdict__in=["fail", "error"]),
    "error": Q(status=Answer.Status.ERROR),
}
VIEWS = {"failures": "failures only", "differing": "differs between contestants"}
SORTS = {
    "": "plan order",
    "score": "score, lowest first",
    "-score": "score, highest first",
    "-cost": "cost, highest first",
    "cost": "cost, lowest first",
    "-latency": "latency, slowest first",
    "latency": "latency, fastest first",
    "-length": "length, longest first",
    "length": "length, shortest first",
}
FILTERS = ("task", "case", "contestant", "verdict", "view", "q", "regex", "sort")


@dataclass(frozen=True)
class AnswerRow:
    """One answer as the browser shows it: its case's files, its text as indented JSON
    when it reads as JSON, and the ids of the pairs it is a side of."""

    answer: Answer
    files: list[CaseFile]
    pretty_json: str | None
    pairs: list[int]


@require_GET
@vary_on_headers("HX-Request")
def answer_list(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = run_or_404(run_id)
    filters = filters_of(request, FILTERS)
    answers, search_error = _filtered(run, filters)
    answers = answers.defer("request", "exec_check", "parsed_json")
    unfiltered = not any(value for name, value in filters.items() if name != "sort")
    page = page_of(request, answers, run, every=unfiltered)
    context = {
        "run": run,
        "page": page,
        "rows": _rows(run, list(page)),
        "filters": filters,
        "search_error": search_error,
        "oob": request.htmx,  # the search's message goes beside its field, out of band
        "query": filter_query(filters),
        "tasks": task_ids(run),
        "verdicts": list(ANSWER_VERDICTS),
        "views": VIEWS,
        "sorts": SORTS,
    }
    template = "runs/answer_list.html" + ("#answer-results" if request.htmx else "")
    return render(request, template, context)


@require_GET
def answer_csv(request: HttpRequest, run_id: str) -> HttpResponseBase:
    """The answers the browser shows for the same query string, every page of them, as the
    CLI's answer CSV (`evalsite report RUN --format csv`)."""
    run = run_or_404(run_id)
    filters = filters_of(request, FILTERS)
    answers, search_error = _filtered(run, filters)
    if search_error:
        return HttpResponse(f"{search_error}\n", status=400, content_type="text/plain")
    lines = csv_lines(ANSWER_COLUMNS, answer_rows(run, answers))
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="answers-{run.short_id}.csv"'
    return response


def _filtered(run: Run, filters: dict[str, str]) -> tuple[QuerySet[Answer], str]:
    """The run's answers as `filters` choose and order them, and why the search could not
    be used ("" when it could: the answers are then left unsearched)."""
    answers = Answer.objects.filter(run=run)
    for name, field in (("task", "task_id"), ("case", "case_id"), ("contestant", "contestant")):
        if filters[name]:
            answers = answers.filter(**{field: filters[name]})
    if filters["verdict"] in ANSWER_VERDICTS:
        answers = answers.filter(ANSWER_VERDICTS[filters["verdict"]])
    if filters["view"] == "failures":
        answers = answers.failures()
    elif filters["view"] == "differing":
        answers = answers.differing()
    search_error = ""
    if filters["q"] and filters["regex"]:
        try:
            answers = answers.matching(filters["q"])
        except PatternError as error:
            search_error = f"Search: {error}"
    elif filters["q"]:
        answers = answers.containing(filters["q"])
    return answers.in_order(filters["sort"]), search_error


def _rows(run: Run, answers: list[Answer]) -> list[AnswerRow]:
    files = files_by_case(run, ((answer.task_id, answer.case_id) for answer in answers))
    ids = [answer.pk for answer in answers]
    pairs: dict[int, list[int]] = defaultdict(list)
    sides = Pair.objects.filter(Q(baseline_id__in=ids) | Q(candidate_id__in=ids))
    for pk, baseline, candidate in sides.order_by("pk").values_list(
        "pk", "baseline_id", "candidate_id"
    ):
        for side in {baseline, candidate}:
            pairs[side].append(pk)
    return [
        AnswerRow(answer, files[answer.task_id, answer.case_id], _pretty(answer.text),
                  pairs[answer.pk])
        for answer in answers
    ]  # fmt: skip


def _pretty(text: str) -> str | None:
    """`text` as indented JSON when the whole of it is a JSON object or array, else None."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.dumps(load_json(text), indent=2, ensure_ascii=False)
    except JsonTextError:
        return None
