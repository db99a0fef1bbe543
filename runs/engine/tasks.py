"""Background jobs: the functions the worker's cluster runs, and queueing them. With
evalsite.management.worker_process (which runs that cluster), the only module that imports
django_q.

Jobs take ids only (never a key or a secret: django-q2 pickles arguments into the
database) and are idempotent: a redelivered shard skips finished answers.
"""

from __future__ import annotations

import datetime as dt
import logging
import mmap
import time

from django.conf import settings
from django.db import InterfaceError, OperationalError, connections, transaction
from django.db.models import Q
from django.utils import timezone
from django_q.tasks import async_task

from evalsite.core.no_look import NO_WORKER
from evalsite.core.pacing import Limits
from runs.models import Run
from runs.models.run import calls_in_flight

log = logging.getLogger(__name__)


# A shard whose database connection is lost starts again this many times, after 1, 2, 4 …
# seconds, before its task fails: django-q2 would hand a failed task out again only after
# Q_CLUSTER["retry"] (an hour), and the run would wait a lease for the stalled-run sweep.
SHARD_RECONNECTS = 5

# One byte shared by `evalsite worker`'s main process and every cluster process it forks:
# set by the first SIGINT or SIGTERM (evalsite.management.worker_process), so the shards
# running in the cluster claim nothing more. Made by stop_flag() before the cluster starts;
# None in any other process.
_worker_stopping: mmap.mmap | None = None


def stop_flag() -> mmap.mmap:
    """The byte that halts this process's shards, and its forks', once set to 1."""
    global _worker_stopping
    _worker_stopping = mmap.mmap(-1, 1)  # anonymous and shared: the forks see it set
    return _worker_stopping


def _halt() -> bool:
    """Whether the worker this shard runs in is stopping."""
    return _worker_stopping is not None and _worker_stopping[0] == 1


def run_shard(run_id: str, shards: int, index: int = 0) -> None:
    """One shard of a run (runs until the run has nothing pending). A lost connection to the
    database (PostgreSQL restarted, a connection terminated mid-transaction, the network)
    starts the shard again on a new connection: every step is idempotent, and the calls
    the lost shard had claimed go back to pending when their lease expires."""
    from runs.engine.runner import execute

    for attempt in range(SHARD_RECONNECTS + 1):
        try:
            execute(run_id, shards=shards, index=index, halt=_halt)
            return
        except (OperationalError, InterfaceError) as error:
            if attempt == SHARD_RECONNECTS or _halt():
                raise
            log.warning("run %s: shard lost its database connection (%s); again", run_id, error)
            connections.close_all()
            time.sleep(min(2**attempt, 30))


def enqueue_run(run: Run, *, shards: int = 2) -> None:
    """Queue `shards` shards of a planned run once the plan is committed (fewer when its
    per-model limit has fewer calls: each shard makes its part of them). A broker that cannot
    take them (Redis down or restarting) is logged, not raised: the run is stored and queued,
    and a worker's stalled-run sweep starts it within two leases (the web's launch answered
    500 for a run it had stored)."""

    shards = Limits(calls_in_flight(run.stored_options.concurrency)).shards(shards)

    def send() -> None:
        for index in range(shards):
            name = f"{run.id}-shard-{index}"
            async_task("runs.engine.tasks.run_shard", run.id, shards, index=index, task_name=name)

    transaction.on_commit(send, robust=True)


def resume_stalled_runs() -> list[str]:
    """Queue one shard for each run that no live shard is working on (e.g. after a crash
    of every worker, or of an `evalsite run` process); returns their ids. A run is resumed
    at most once per two leases, however many workers look (a conditional stamp). A no-look
    run is never resumed here (its case data died with its process: `evalsite run --resume`
    resumes it); one asked to cancel is closed. A run whose plan was not stored whole is
    failed, unless it was asked to cancel: only the process that planned it held the rest
    (runs.planning.planner.start_plan)."""
    lease = settings.EVALSITE_CLAIM_LEASE_S
    now = timezone.now()
    recently = now - dt.timedelta(seconds=2 * lease)
    resumed = []
    stalled = Run.objects.stalled(lease)
    unstored = {"plan_stored_at": None, "cancel_requested": False}  # one asked to cancel is closed
    for run in stalled.filter(**unstored):
        run.fail_unstored_plan("the process storing the rest stopped first")
    stalled = stalled.exclude(**unstored)
    for run_id in stalled.filter(no_look=True, cancel_requested=False).values_list("pk", flat=True):
        log.warning("not resuming run %s: %s", run_id, NO_WORKER)
    stalled = stalled.exclude(no_look=True, cancel_requested=False)
    for run_id in stalled.values_list("pk", flat=True):
        fresh = Q(resumed_at__isnull=True) | Q(resumed_at__lt=recently)
        if Run.objects.filter(fresh, pk=run_id).update(resumed_at=now):
            async_task("runs.engine.tasks.run_shard", run_id, 1, task_name=f"{run_id}-resume")
            resumed.append(run_id)
    return resumed


def release_ended_claims() -> None:
    """Give back, with their reservations, the claims a killed shard left on a run that
    has since ended: a final run holds no reservation (docs/running.md)."""
    lease = settings.EVALSITE_CLAIM_LEASE_S
    for run in Run.objects.ended_holding_claims(lease):
        run.answers.reclaim_expired(run, lease, judge=False)
        run.judgements.reclaim_expired(run, lease, judge=True)
