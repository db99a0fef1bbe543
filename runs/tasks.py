"""Background jobs. The only module that imports django_q.

Jobs take ids only (never a key or a secret: django-q2 pickles arguments into the
database) and are idempotent: a redelivered shard skips finished answers.
"""

from __future__ import annotations

import datetime as dt
import signal

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Q
from django.utils import timezone
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
    of every worker, or of an `evalsite run` process); returns their ids. A run is resumed
    at most once per two leases, however many workers look (a conditional stamp)."""
    lease = settings.EVALSITE_CLAIM_LEASE_S
    now = timezone.now()
    recently = now - dt.timedelta(seconds=2 * lease)
    resumed = []
    for run_id in Run.objects.stalled(lease).values_list("pk", flat=True):
        fresh = Q(resumed_at__isnull=True) | Q(resumed_at__lt=recently)
        if Run.objects.filter(fresh, pk=run_id).update(resumed_at=now):
            async_task("runs.tasks.run_shard", run_id, 1, task_name=f"{run_id}-resume")
            resumed.append(run_id)
    return resumed


def run_worker() -> None:
    """Run a django-q2 cluster until SIGINT or SIGTERM, looking for stalled runs every lease
    (a shard killed with its worker is redelivered by the ORM broker only after
    Q_CLUSTER["retry"], and never by the Redis broker)."""
    period = max(1.0, min(60.0, settings.EVALSITE_CLAIM_LEASE_S))
    _resume_quietly()
    cluster = Cluster()
    _stop_once_on_signals(cluster)
    cluster.start()
    while cluster.sentinel is not None and cluster.sentinel.is_alive():
        cluster.sentinel.join(period)
        if cluster.stop_event is not None and not cluster.stop_event.is_set():
            _resume_quietly()


def _stop_once_on_signals(cluster: Cluster) -> None:
    """Stop the cluster on the first SIGINT or SIGTERM and ignore the ones after it.

    django-q2's own handler calls stop() on every signal; a second signal arriving while the
    first is inside multiprocessing's Event.set() re-enters it and blocks forever on the
    Event's lock (a Ctrl-C in a terminal, then serve's SIGTERM), leaving the cluster's
    processes running after the worker is killed."""
    stopping: list[int] = []

    def stop(signum, frame) -> None:
        if stopping:
            return
        stopping.append(signum)
        cluster.stop()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def _resume_quietly() -> None:
    # No connection may outlive this call: the cluster's processes are forked from this
    # one, and a child closing an inherited PostgreSQL connection ends the parent's too.
    try:
        resume_stalled_runs()
    finally:
        connections.close_all()
