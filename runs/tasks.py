"""Background jobs. The only module that imports django_q.

Jobs take ids only (never a key or a secret: django-q2 pickles arguments into the
database) and are idempotent: a redelivered shard skips finished answers.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django_q.cluster import Cluster
from django_q.tasks import async_task

from runs.models import Run


def run_shard(run_id: str, shards: int) -> None:
    """One shard of a run (runs until the run has nothing pending)."""
    from runs.runner import execute

    execute(run_id, shards=shards)


def enqueue_run(run: Run, *, shards: int = 2) -> None:
    """Queue `shards` shards of a planned run once the plan is committed."""

    def send() -> None:
        for index in range(shards):
            async_task("runs.tasks.run_shard", run.id, shards, task_name=f"{run.id}-shard-{index}")

    transaction.on_commit(send)


def resume_stalled_runs() -> list[str]:
    """Queue one shard for each run that no live shard is working on (e.g. after a crash
    of every worker, or of an `evalsite run` process); returns their ids."""
    stalled = list(
        Run.objects.stalled(settings.EVALSITE_CLAIM_LEASE_S).values_list("pk", flat=True)
    )
    for run_id in stalled:
        async_task("runs.tasks.run_shard", run_id, 1, task_name=f"{run_id}-resume")
    return stalled


def run_worker() -> None:
    """Resume stalled runs, then run a django-q2 cluster until SIGINT or SIGTERM."""
    resume_stalled_runs()
    Cluster().start()
