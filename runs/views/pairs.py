"""A run's pairs: the paginated, filtered list, and one pair side by side with what each
side was sent, the judge's verdicts and a word diff of the two answers."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from evalsite.core.textdiff import MAX_WORDS, WordDiff, word_diff
from evalsite.htmx import HtmxHttpRequest
from runs.models import Answer, Judgement, Pair, Run
from runs.results.media import case_files
from runs.results.sent import pair_sent
from runs.views.browsing import filter_query, filters_of, page_of, run_or_404, task_ids


@require_GET
@vary_on_headers("HX-Request")
def pair_list(request: HtmxHttpRequest, run_id: str) -> HttpResponse:
    run = run_or_404(run_id)
    filters = filters_of(request, ("task", "candidate", "excluded", "flips", "disagree"))
    pairs = Pair.objects.filter(run=run).defer("baseline_sha", "candidate_sha")
    if filters["task"]:
        pairs = pairs.filter(task_id=filters["task"])
    if filters["candidate"]:
        pairs = pairs.filter(candidate_contestant=filters["candidate"])
    if filters["excluded"] == "yes":
        pairs = pairs.excluded()
    elif filters["excluded"] == "no":
        pairs = pairs.included()
    if filters["flips"]:
        pairs = pairs.filter(flip=True)
    if filters["disagree"]:
        pairs = pairs.disagreements()
    page = page_of(request, pairs.order_by("pk"), run, every=not any(filters.values()))
    context = {
        "run": run,
        "page": page,
        "filters": filters,
        "query": filter_query(filters),
        "tasks": task_ids(run),
        "candidates": run.contestants[1:],
    }
    template = "runs/pair_list.html" + ("#pair-results" if request.htmx else "")
    return render(request, template, context)


@require_GET
def pair_detail(request: HttpRequest, run_id: str, pair_id: int) -> HttpResponse:
    run = run_or_404(run_id)
    pair = get_object_or_404(
        Pair.objects.select_related("baseline", "candidate"), run=run, pk=pair_id
    )
    judgements = {j.order: j for j in Judgement.objects.filter(pair=pair, kind="pair")}
    context = {
        "run": run,
        "pair": pair,
        "sides": [("Baseline", pair.baseline), ("Candidate", pair.candidate)],
        "judgements": [judgements.get(1), judgements.get(2)],
        "files": case_files(run, pair.task_id, pair.case_id),
        "sent": pair_sent(run, pair),
        "diff": _answers_diff(run, pair),
        "diff_words": MAX_WORDS,
        "previous": Pair.objects.filter(run=run, pk__lt=pair.pk).order_by("-pk").first(),
        "next": Pair.objects.filter(run=run, pk__gt=pair.pk).order_by("pk").first(),
    }
    return render(request, "runs/pair_detail.html", context)


def _answers_diff(run: Run, pair: Pair) -> WordDiff | None:
    """The two answers word by word; None when one has no text to compare (or the run hides
    its answers)."""
    sides = (pair.baseline, pair.candidate)
    if run.no_look or any(side.status != Answer.Status.DONE for side in sides):
        return None
    return word_diff(pair.baseline.text, pair.candidate.text)
