"""The estimate of a planned run: what each contestant's answers and the judge's calls will
cost, from the price table, the response cache and the output tokens a model gave before.

The planner calls it once a run's cells are known; nothing here refuses a run."""

from __future__ import annotations

import itertools
from decimal import Decimal

from evalsite.core.judging import PairSide, pair_requests
from evalsite.core.plan import (
    CellCost,
    EstimateLine,
    call_hash,
    estimate_answers,
    estimate_judge,
    input_tokens,
    max_output_tokens,
)
from evalsite.core.pricing import Usage, call_cost
from evalsite.core.providers import Provider, Request
from runs.models import CachedResponse


def cached_flags(hashes: list[str], no_cache: bool, providers: list[Provider]) -> list[bool]:
    if no_cache:
        return [False] * len(hashes)
    found = set(
        CachedResponse.objects.filter(request_hash__in=hashes).values_list(
            "request_hash", flat=True
        )
    )
    return [h in found and p.cacheable for h, p in zip(hashes, providers, strict=True)]


def estimate(suite, cells, contestants, cached, rows, providers, judge_model) -> dict:
    keys = [(providers[cell.contestant].name, cell.request.model, cell.task_id) for cell in cells]
    history = CachedResponse.objects.mean_output_tokens(set(keys))
    costs = [
        CellCost(cell, rows.get(cell.request.model), is_cached, history[key])
        for cell, is_cached, key in zip(cells, cached, keys, strict=True)
    ]
    lines = estimate_answers(costs)
    judge = estimate_judge(
        lines,
        cells,
        contestants,
        judge_row=rows.get(judge_model) if judge_model else None,
        judge_max_tokens=(suite.judge.max_tokens if suite.judge else None) or 400,
        judged_tasks={task.id for task in suite.tasks if task.judge} if judge_model else set(),
        rubric_chars=len(suite.judge.rubric) if suite.judge else 0,
        pairing=suite.judge.pairing if suite.judge else "baseline",
        graded_cases=suite.graded_cases() if judge_model else frozenset(),
        consistency=suite.judge.consistency if suite.judge and judge_model else 0,
    )
    total = sum((line.cost_usd for line in lines.values()), judge.cost_usd)
    return {
        "contestants": [lines[c].as_dict() for c in contestants if c in lines],
        "judge": judge.as_dict() if judge_model else None,
        "answers_usd": str(sum((line.cost_usd for line in lines.values()), Decimal(0))),
        "total_usd": str(total),
        "cached_calls": sum(cached),
        "calls": len(cells) + judge.calls,
    }


# --- a plan of given answers ----------------------------------------------------------------


def estimate_given(suite, cells, given, contestants, judge, row, no_cache: bool) -> dict:
    """The estimate of a plan of given answers: the answers cost nothing and are no calls;
    the judge's calls are known exactly (the answers are), so those the response cache
    holds cost nothing and the rest are priced at prompt characters ÷ 4 in and
    ``max_tokens`` out by the judge's row."""
    requests = _given_judge_requests(suite, cells, given, contestants) if judge else []
    hashes = [call_hash(request, judge) for request in requests]
    cached = cached_flags(hashes, no_cache, [judge] * len(hashes))
    line = EstimateLine("judge", priced=row is not None, output_source={"max_tokens"})
    for request, is_cached in zip(requests, cached, strict=True):
        line.calls += 1
        if is_cached:
            line.cached_calls += 1
            continue
        prepared = judge.prepare(request)
        usage = Usage(input_tokens(prepared), max_output_tokens(prepared))
        line.input_tokens += usage.input_tokens
        line.output_tokens += usage.output_tokens
        if row is not None:
            line.cost_usd += call_cost(row, usage) or Decimal(0)
    return {
        "contestants": [],
        "judge": line.as_dict() if judge else None,
        "answers_usd": "0",
        "total_usd": str(line.cost_usd),
        "cached_calls": line.cached_calls,
        "calls": line.calls,
    }


def _given_judge_requests(suite, cells, given, contestants) -> list[Request]:
    """The pair calls the engine will make on the given answers, built by its own
    `pair_requests` (the core's), so their hashes find the cache. Grading is not estimated:
    the planner refuses a plan of given answers with a graded task."""
    judged = {task.id for task in suite.tasks if task.judge}
    keys = dict.fromkeys((c.task_id, c.case_id, c.repeat) for c in cells if c.task_id in judged)
    pairing = suite.judge.pairing if suite.judge else "baseline"
    sides = (
        list(itertools.combinations(contestants, 2))
        if pairing == "all"
        else [(contestants[0], candidate) for candidate in contestants[1:]]
    )
    requests = []
    for task_id, case_id, repeat in keys:
        for baseline, candidate in sides:
            texts = given[task_id, case_id, baseline], given[task_id, case_id, candidate]
            calls = pair_requests(
                suite,
                suite.judge_model,
                (task_id, case_id, repeat),
                *map(PairSide, texts),
                contestants=(baseline, candidate),
            )
            requests += [request for _, request in calls]
    return requests
