"""The MCP tools about one case: `render_prompt` (the request a contestant would be sent,
with no call made) and `get_case_result` (a case's verdicts in a stored run).

Both refuse with :class:`~evalsite.mcp.tools.Refused` as the other tools do; neither makes
a provider call nor writes a row.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any
from urllib.parse import urlencode

from django.db.models import Q
from django.urls import reverse

from evalsite.core.plan import call_hash, plan_cells
from evalsite.core.providers import (
    Provider,
    ProviderError,
    required_key,
)
from evalsite.core.suites import Contestant, parse_contestant
from evalsite.core.suites import Suite as LoadedSuite
from evalsite.mcp import replies
from evalsite.mcp.tools import Refused, find_run, load, suite_file
from runs.models import (
    Answer,
    CachedResponse,
    Endpoint,
    Judgement,
    NoActivePriceTable,
    Pair,
    Run,
)
from runs.planning.preview import preview_contestant, preview_provider
from runs.planning.start import PlanError

ANSWER_FIELDS = (
    "pk", "repeat", "status", "passed", "schema_verdict", "schema_mode", "checks",
    "checks_passed", "exec_check", "exec_verdict", "grade_score", "grade_passed", "error_kind",
    "error_message", "latency_ms", "input_tokens", "output_tokens", "cached_input_tokens",
    "cost_usd", "cost_if_uncached_usd", "cached",
)  # fmt: skip
PAIR_FIELDS = (
    "pk", "repeat", "baseline_contestant", "candidate_contestant", "excluded_reason",
    "excluded_side", "category", "score", "flip", "human",
)  # fmt: skip


# --- render_prompt -----------------------------------------------------------------------


def render_prompt(suite_path: str, contestant: str, case: str) -> dict[str, Any]:
    """The request `contestant` would be sent for `case` of the suite at `suite_path`, as
    its provider prepares it (a prompted schema instruction included). Nothing is called,
    registered or stored: a missing key is reported, not refused."""
    loaded = load(suite_file(suite_path))
    if loaded.no_look:
        raise Refused(
            "no_look",
            "render_prompt is refused for a no-look suite (privacy: {no_look: true}): the "
            "rendered prompt is its case data, which nobody may read",
        )
    task_id, case_id = case_in(loaded, case)
    chosen = contestant_in(loaded, contestant)
    key = _key(chosen.model)
    provider = _provider(loaded, chosen, key)
    (cell,) = plan_cells(loaded, [str(chosen)], repeats=1, only=[f"{task_id}/{case_id}"])
    request_hash = call_hash(cell.request, provider)
    cached = provider.cacheable and CachedResponse.objects.filter(request_hash=request_hash)
    return replies.prompt_reply(
        suite=loaded.name,
        task=task_id,
        case=case_id,
        contestant=str(chosen),
        request=provider.prepare(cell.request).to_json(),
        schema_mode=provider.schema_mode(cell.request),
        request_hash=request_hash,
        cached=bool(cached and cached.exists()),
        key=None if key is None else {"name": key, "set": bool(os.environ.get(key, "").strip())},
    )


def case_in(loaded: LoadedSuite, case: str) -> tuple[str, str]:
    """(task, case) that `case` names: ``task/case``, or a case id only one task has."""
    text = case.strip()
    task_id, slash, case_id = text.partition("/")
    if slash:
        try:
            loaded.task(task_id).case(case_id)
        except ValueError as error:
            raise Refused("no_such_case", str(error)) from None
        return task_id, case_id
    owners = [task.id for task in loaded.tasks if any(c.id == text for c in task.cases)]
    if len(owners) == 1:
        return owners[0], text
    if owners:
        raise Refused(
            "no_such_case",
            f"case {text!r} is in several tasks ({', '.join(owners)}): name it task/case",
        )
    raise Refused("no_such_case", f"suite {loaded.name!r} has no case {text!r}")


def contestant_in(loaded: LoadedSuite, text: str) -> Contestant:
    """`text` as a contestant a run of `loaded` would accept: a model with a price (or
    scripted or command) and a variant the suite declares; Refused as run_suite refuses."""
    try:
        chosen = preview_contestant(loaded, text)
    except (PlanError, NoActivePriceTable) as error:
        raise Refused("plan_error", str(error)) from None
    return chosen


def _key(model: str) -> str | None:
    try:
        return required_key(model, endpoints=Endpoint.objects.configs())
    except ProviderError as error:
        raise Refused("plan_error", str(error)) from None


def _provider(loaded: LoadedSuite, chosen: Contestant, key: str | None) -> Provider:
    """The contestant's provider as a run builds it (a scripted variant's own replies
    included, so the cache key is the run's); a key that is not set is stood in for,
    since the provider only prepares the request and is never called."""
    env = dict(os.environ)
    if key is not None and not env.get(key, "").strip():
        env[key] = "render_prompt: not set"
    try:
        return preview_provider(loaded, chosen, env)
    except (PlanError, ProviderError) as error:
        raise Refused("plan_error", str(error)) from None


# --- get_case_result ---------------------------------------------------------------------


def case_result(run_id: str, contestant: str, case: str) -> dict[str, Any]:
    """The verdicts of `contestant`'s answers to `case` in a run (every repeat), its pairs
    and where to read the answers; never their text."""
    run = find_run(run_id)
    chosen = _run_contestant(run, contestant)
    task_id, case_id = case_in(run.suite_version.core_suite(), case)
    answers = Answer.objects.filter(run=run, task_id=task_id, case_id=case_id, contestant=chosen)
    rows = list(answers.order_by("repeat").values(*ANSWER_FIELDS))
    if not rows:
        raise Refused(
            "no_such_case",
            f"run {run.id} has no answer by {chosen} on {task_id}/{case_id} (it is "
            f"{run.status}; a run of some cases has none for the others)",
        )
    query = urlencode({"task": task_id, "contestant": chosen})
    return replies.case_reply(
        run.report,
        run_id=run.id,
        status=run.status,
        contestant=chosen,
        task=task_id,
        case=case_id,
        answers=[replies.answer_item(row) for row in rows],
        pairs=_pairs(run, task_id, case_id, chosen),
        answers_url_path=f"{reverse('answer_list', args=[run.id])}?{query}",
    )


def _run_contestant(run: Run, text: str) -> str:
    try:
        chosen = str(parse_contestant(text.strip()))
    except ValueError as error:
        raise Refused("no_such_case", str(error)) from None
    if chosen not in run.contestants:
        listed = ", ".join(run.contestants)
        raise Refused("no_such_case", f"{chosen} is not a contestant of run {run.id} ({listed})")
    return chosen


def _pairs(run: Run, task_id: str, case_id: str, contestant: str) -> list[dict[str, Any]]:
    """The case's pairs `contestant` is in, each with its judge calls: what each said,
    never why."""
    pairs = Pair.objects.filter(run=run, task_id=task_id, case_id=case_id).filter(
        Q(candidate_contestant=contestant) | Q(baseline_contestant=contestant)
    )
    rows = list(pairs.order_by("repeat", "pk").values(*PAIR_FIELDS))
    calls: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
    judged = Judgement.objects.filter(
        pair_id__in=[row["pk"] for row in rows], kind=Judgement.Kind.PAIR
    ).order_by("order")
    for call in judged.values("pair_id", "order", "status", "side", "parse_status"):
        row: dict[str, Any] = dict(call)
        calls[row.pop("pair_id")].append(row)
    return [
        replies.pair_item(
            row, contestant, calls[row["pk"]], reverse("pair_detail", args=[run.id, row["pk"]])
        )
        for row in rows
    ]
