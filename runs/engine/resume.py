"""`evalsite run SUITE --resume RUN`: a run whose process died, continued by this one.

Its reason to exist is the no-look run (docs/no-look.md): no worker may pick one up, since
its case data lived in the memory of the process that died. It is resumed from the suite's
own file, only when that file is unchanged (its sha256 equals the run's version's) and its
cases come from files: each pending call's request is rendered again and must hash to what
its row recorded. Replies that only the dead process held are asked again (what they cost
the first time stays counted: it was billed); a run that died while judging goes back to
answering, its judging redone on the new answers. A run that reads its cases from a datasource
is refused (see :data:`DATASOURCE_REASON`).
"""

from __future__ import annotations

import datetime as dt
import os

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from evalsite.core.plan import call_hash, plan_cells
from evalsite.core.providers import ScriptedReplies, build_contestant_providers
from evalsite.core.suites import Suite
from runs import sealed
from runs.models import Answer, Call, Endpoint, Judgement, Run

DATASOURCE_REASON = (
    "its cases came from a datasource, which cannot be read again the same way: a live "
    "source shifts, changes or drops rows between reads, so the two halves of the run would "
    "describe different data without any error saying so; start a new run"
)


class ResumeRefused(Exception):
    """The run cannot be resumed here; the message says why."""


def resume_run(reference: str, suite: Suite) -> Run:
    """The run `reference` names, ready for this process to execute: checked against the
    suite file `suite`, its case data held here again when it is a no-look run."""
    try:
        run = Run.objects.resolve(reference, paths=True)
    except Run.DoesNotExist as error:
        raise ResumeRefused(str(error)) from None
    _check(run, suite)
    if run.no_look:
        held = sealed.seal(run.id, run.suite_version_id, suite)
        _render_again(run, suite, held)
        if run.status in (Run.Status.JUDGING, Run.Status.REPORTING):
            run.answer_again()  # the answers being judged died with the process
        Answer.objects.filter(run=run).ask_again(run)
    return run


def _check(run: Run, suite: Suite) -> None:
    if run.suite.name != suite.name:
        raise ResumeRefused(f"run {run.id} is a run of suite {run.suite.name}, not {suite.name}")
    if not run.is_active:
        raise ResumeRefused(f"run {run.id} is {run.status}: there is nothing to resume")
    if not run.plan_whole:
        raise ResumeRefused(
            f"run {run.id} cannot be resumed: its process stopped before its plan was stored "
            "whole; start a new run"
        )
    if run.stored_options.datasource:
        raise ResumeRefused(f"run {run.id} cannot be resumed: {DATASOURCE_REASON}")
    if suite.sha256 != run.suite_version.sha256:
        now, then = suite.sha256[:12], run.suite_version.sha256[:12]
        raise ResumeRefused(
            f"run {run.id} cannot be resumed: the suite file changed since it started (its "
            f"sha256 is now {now}, the run's suite was {then}); "
            "its two halves would answer different suites - start a new run"
        )
    if _worked_on(run):
        lease = settings.EVALSITE_CLAIM_LEASE_S
        raise ResumeRefused(
            f"run {run.id} is still being worked on (a call was claimed or finished in the "
            f"last {lease:g} s); if its process is gone, try again after that"
        )


def _worked_on(run: Run) -> bool:
    recent = timezone.now() - dt.timedelta(seconds=settings.EVALSITE_CLAIM_LEASE_S)
    busy = Q(status=Call.Status.CLAIMED, claimed_at__gte=recent) | Q(finished_at__gte=recent)
    calls = (Answer.objects.filter(busy, run=run), Judgement.objects.filter(busy, run=run))
    return any(found.exists() for found in calls)


def _render_again(run: Run, suite: Suite, held: sealed.Sealed) -> None:
    """Each request of the run rendered from the suite file again and held here; refused
    when one does not hash to what its row recorded."""
    options = run.stored_options
    replies = ScriptedReplies.load(options.replies) if options.replies else None
    providers = build_contestant_providers(
        run.contestants, env=os.environ, endpoints=Endpoint.objects.configs(), replies=replies,
        fake=options.fake,
    )  # fmt: skip
    cells = plan_cells(
        suite, run.contestants, repeats=run.repeats, only=options.only, tags=options.tags,
        limit=options.limit,
    )  # fmt: skip
    held.hold_requests((call_hash(c.request, providers[c.contestant]), c.request) for c in cells)
    unknown = Answer.objects.filter(run=run).exclude(request_hash__in=list(held.requests))
    first = unknown.values_list("task_id", "case_id", "contestant").first()
    if first is not None:
        sealed.release(run.id)
        raise ResumeRefused(
            f"run {run.id} cannot be resumed: the request of {first[0]}/{first[1]} for "
            f"{first[2]} renders differently now (a replies file or an endpoint changed?)"
        )
