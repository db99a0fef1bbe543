"""Which pairs a member still has to label (SPEC §10.2)."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from labels.models import Label
from runs.models import Pair, Run, Suite


def latest_labelled_run(suite: Suite) -> Run | None:
    """The suite's latest finished run that has judged pairs: the pairs the queue offers."""
    return (
        Run.objects.for_suite(suite)
        .filter(status=Run.Status.DONE, pairs__score__isnull=False)
        .order_by("-created_at")
        .first()
    )


def unlabelled_pairs(run: Run, user) -> QuerySet[Pair]:
    """The run's judged pairs this member has not labelled (by the pair's content key)."""
    mine = Label.objects.filter(
        labeller=user,
        suite_id=run.suite_version.suite_id,
        task_id=OuterRef("task_id"),
        case_id=OuterRef("case_id"),
        baseline=OuterRef("baseline_contestant"),
        candidate=OuterRef("candidate_contestant"),
        baseline_sha=OuterRef("baseline_sha"),
        candidate_sha=OuterRef("candidate_sha"),
    )
    return Pair.objects.filter(run=run).judged().exclude(Exists(mine))


def queue_count(user) -> int:
    """Pairs waiting for this member across every suite's latest judged run."""
    total = 0
    for suite in Suite.objects.all():
        run = latest_labelled_run(suite)
        if run is not None:
            total += unlabelled_pairs(run, user).count()
    return total
