"""Background jobs. The only module that imports django_q.

Jobs take ids only (never a key or a secret: django-q2 pickles arguments into the
database) and are idempotent: a redelivered shard skips finished answers.
"""

from __future__ import annotations

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


def run_worker() -> None:
    """Run a django-q2 cluster in the foreground until SIGINT or SIGTERM."""
    Cluster().start()
