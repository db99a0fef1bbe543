"""Judge self-consistency where the ORM meets the core (``judge.consistency: k``,
docs/judging.md): a seeded sample of a run's judged pairs asked again k times in each
order, each ask a ``recheck`` judge call whose request carries its attempt number, so it
misses the response cache; and the rows the report compares with the first verdicts.
"""

from __future__ import annotations

import dataclasses

from evalsite.core.providers.base import Provider
from evalsite.core.stats.consistency import sample_pairs
from evalsite.core.suites import Suite
from runs.engine import judging  # the module, read at call time: judging calls queue_rechecks
from runs.models import Call, Judgement, Pair, Run


def queue_rechecks(run: Run, suite: Suite, judge: Provider, judge_model: str) -> None:
    """Queue the extra calls once: a run that already has any has them all (they are
    queued in one transaction with the pair calls)."""
    k = suite.judge.consistency if suite.judge else 0
    if not k or Judgement.objects.filter(run=run, kind=Judgement.Kind.RECHECK).exists():
        return
    included = Pair.objects.included().filter(run=run)
    chosen = sample_pairs(
        list(included.values_list("pk", flat=True)), f"{run.suite_version.sha256}:{run.id}"
    )
    calls = []
    for pair in included.filter(pk__in=chosen).select_related("baseline", "candidate"):
        key = (pair.task_id, pair.case_id, pair.repeat)
        requests = judging.pair_requests(
            suite,
            judge_model,
            key,
            judging._side(pair.baseline),
            judging._side(pair.candidate),
            contestants=(pair.baseline_contestant, pair.candidate_contestant),
        )
        for attempt in range(1, k + 1):
            for order, request in requests:
                again = dataclasses.replace(request, attempt=attempt)
                calls.append(
                    judging._judgement(  # the pair calls' own row builder
                        run,
                        again,
                        judge,
                        judge_model,
                        pair=pair,
                        order=order,
                        kind=Judgement.Kind.RECHECK,
                    )
                )
    Judgement.objects.bulk_create(calls, batch_size=500)


def recheck_rows(run: Run) -> list[tuple[str, int, str, str]]:
    """(candidate, pair, first verdict, extra verdict) for every extra verdict read whose
    order's first verdict was read too, in baseline / candidate / tie terms; pairs against
    the baseline only (with ``pairing: all`` the sample holds others too)."""
    read = {"status": Call.Status.DONE, "parse_status": Judgement.Parse.OK}
    first = {
        (row["pair_id"], row["order"]): row["side"]
        for row in Judgement.objects.filter(run=run, kind=Judgement.Kind.PAIR, **read).values(
            "pair_id", "order", "side"
        )
    }
    again = Judgement.objects.filter(
        run=run,
        kind=Judgement.Kind.RECHECK,
        pair__baseline_contestant=run.contestants[0],  # the pairs a win-rate is over
        **read,
    ).values("pair_id", "order", "side", "pair__candidate_contestant")
    return [
        (row["pair__candidate_contestant"], row["pair_id"], first[key], row["side"])
        for row in again.order_by("pk")
        if (key := (row["pair_id"], row["order"])) in first
    ]
