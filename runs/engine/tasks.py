"""Background jobs. The only module that imports django_q.

Jobs take ids only (never a key or a secret: django-q2 pickles arguments into the
database) and are idempotent: a redelivered shard skips finished answers.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import logging
import mmap
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import InterfaceError, OperationalError, connections, transaction
from django.db.models import Q
from django.utils import timezone
from django_q.cluster import Cluster
from django_q.tasks import async_task

from evalsite.core.no_look import NO_WORKER
from runs.models import Run

log = logging.getLogger(__name__)


# A shard whose database connection is lost starts again this many times, after 1, 2, 4 …
# seconds, before its task fails: django-q2 would hand a failed task out again only after
# Q_CLUSTER["retry"] (an hour), and the run would wait a lease for the stalled-run sweep.
SHARD_RECONNECTS = 5

# One byte shared by `evalsite worker`'s main process and every cluster process it forks:
# set by the first SIGINT or SIGTERM, so the shards running in the cluster claim nothing more.
# Made by run_worker before the cluster starts; None in any other process.
_worker_stopping: mmap.mmap | None = None


def _halt() -> bool:
    """Whether the worker this shard runs in is stopping."""
    return _worker_stopping is not None and _worker_stopping[0] == 1


def run_shard(run_id: str, shards: int) -> None:
    """One shard of a run (runs until the run has nothing pending). A lost connection to the
    database (PostgreSQL restarted, a connection terminated mid-transaction, the network)
    starts the shard again on a new connection: every step is idempotent, and the calls
    the lost shard had claimed go back to pending when their lease expires."""
    from runs.engine.runner import execute

    for attempt in range(SHARD_RECONNECTS + 1):
        try:
            execute(run_id, shards=shards, halt=_halt)
            return
        except (OperationalError, InterfaceError) as error:
            if attempt == SHARD_RECONNECTS or _halt():
                raise
            log.warning("run %s: shard lost its database connection (%s); again", run_id, error)
            connections.close_all()
            time.sleep(min(2**attempt, 30))


def enqueue_run(run: Run, *, shards: int = 2) -> None:
    """Queue `shards` shards of a planned run once the plan is committed. A broker that cannot
    take them (Redis down or restarting) is logged, not raised: the run is stored and queued,
    and a worker's stalled-run sweep starts it within two leases (the web's launch answered
    500 for a run it had stored)."""

    def send() -> None:
        for index in range(shards):
            async_task(
                "runs.engine.tasks.run_shard", run.id, shards, task_name=f"{run.id}-shard-{index}"
            )

    transaction.on_commit(send, robust=True)


def resume_stalled_runs() -> list[str]:
    """Queue one shard for each run that no live shard is working on (e.g. after a crash
    of every worker, or of an `evalsite run` process); returns their ids. A run is resumed
    at most once per two leases, however many workers look (a conditional stamp). A no-look
    run is never resumed here (its case data died with its process: `evalsite run --resume`
    resumes it); one asked to cancel is closed."""
    lease = settings.EVALSITE_CLAIM_LEASE_S
    now = timezone.now()
    recently = now - dt.timedelta(seconds=2 * lease)
    resumed = []
    stalled = Run.objects.stalled(lease)
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


def run_worker(*, stop_with: int | None = None) -> None:
    """Run a django-q2 cluster until SIGINT or SIGTERM, looking for stalled runs every lease
    (a shard killed with its worker is redelivered by the ORM broker only after
    Q_CLUSTER["retry"], and never by the Redis broker).

    After the first signal the cluster has EVALSITE_WORKER_STOP_GRACE_S to stop; what is
    left of it then is killed (a busy shard's claims go back to pending when their lease
    expires), so the worker stops in bounded time however the signal arrives.

    With `stop_with`, the pid of the process that started this one (`serve`), the worker
    is sent SIGTERM when that process dies, however it dies (Linux)."""
    global _worker_stopping
    period = max(1.0, min(60.0, settings.EVALSITE_CLAIM_LEASE_S))
    _worker_stopping = mmap.mmap(-1, 1)  # anonymous and shared: the forks see it set
    _resume_quietly()
    _cluster_dies_with_its_parents()
    if stop_with is not None:
        _stop_with_parent(stop_with)
    cluster = Cluster()
    stop = _StopOnSignals(cluster, grace=settings.EVALSITE_WORKER_STOP_GRACE_S)
    try:
        cluster.start()
    except RuntimeError:
        if stop.requested:
            return  # the group's SIGTERM reached the sentinel while it was starting
        raise
    while cluster.sentinel.is_alive():
        cluster.sentinel.join(period)
        if not stop.requested:
            _resume_quietly()


class _StopOnSignals:
    """The first SIGINT or SIGTERM stops the cluster within `grace` seconds; later ones are
    ignored. Its busy shards claim nothing more from that moment (their calls in flight
    finish and are written, the calls they had claimed and not sent go back to pending):
    they claimed on during the grace and were killed at its end holding calls that were
    then paid twice.

    Nothing here blocks the main thread on the cluster's shared locks. django-q2's handler
    calls stop(), whose Event.set() waits for every process asleep on the event to wake:
    when SIGTERM goes to the whole process group (`kill -- -PGID`, `timeout`, systemd) the
    sentinel dies inside that wait and the set() never returns (the worker then hung for
    more than ten minutes). Here the handler only starts a thread that sets the event and,
    when the grace is over, kills whatever is left of the cluster and ends the process."""

    def __init__(self, cluster: Cluster, *, grace: float) -> None:
        self.cluster = cluster
        self.grace = grace
        self.requested = False
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        if self.requested:
            return
        self.requested = True
        if _worker_stopping is not None:
            _worker_stopping[0] = 1
        # Started here rather than up front: a thread alive when the cluster forks makes
        # Python warn that fork() may deadlock. The main thread is never inside threading's
        # own locks (which Thread.start() takes) at the points this handler can interrupt.
        threading.Thread(target=self._stop_within_grace, name="stop", daemon=True).start()

    def _stop_within_grace(self) -> None:
        threading.Thread(target=self._set_stop_event, name="stop-event", daemon=True).start()
        time.sleep(self.grace)
        killed = _kill_descendants(os.getpid())
        if killed:
            sys.stderr.write(
                f"evalsite worker: the cluster did not stop within {self.grace:g}s; killed "
                f"its {killed} remaining processes (what they had claimed goes back to "
                "pending when its lease expires).\n"
            )
            sys.stderr.flush()
        os._exit(0)

    def _set_stop_event(self) -> None:
        # May never return (see the class docstring); the grace bounds it.
        while self.cluster.stop_event is None:  # a signal before start() made the event
            time.sleep(0.05)
        self.cluster.stop_event.set()


def _kill_descendants(root: int) -> int:
    """SIGKILL every process below `root`, parents before children (a sentinel killed first
    cannot replace the workers killed after it); how many there were."""
    pids = _descendants(root)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(pids)


def _descendants(root: int) -> list[int]:
    """The processes below `root`, generation by generation, from /proc (Linux)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # "pid (comm) state ppid …": comm may hold spaces and parentheses.
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone meanwhile
        parents[int(stat.parent.name)] = int(fields[1])
    found: list[int] = []
    generation = {root}
    while generation:
        generation = {pid for pid, parent in parents.items() if parent in generation}
        found += sorted(generation)
    return found


# Forks below the worker's process that die with their parent: the sentinel with the worker,
# the sentinel's workers, pusher and monitor with the sentinel; not what a shard starts.
_DIE_WITH_PARENT_GENERATIONS = 2
_generations_left = 0
_forking_pid = 0
_prctl: Callable[..., int] | None = None  # libc prctl, looked up once (Linux)


def _cluster_dies_with_its_parents() -> None:
    """Make the cluster's processes die with their parent (Linux's PR_SET_PDEATHSIG), so a
    worker killed outright (SIGKILL, the OOM killer) or a sentinel killed at the end of the
    grace leaves nothing running. For a process that runs the worker until it exits."""
    global _generations_left, _prctl
    if not sys.platform.startswith("linux"):
        return  # elsewhere the kill at the end of the grace is the only bound
    if _prctl is None:
        _prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before any fork
        os.register_at_fork(before=_remember_parent, after_in_child=_die_with_parent)
    _generations_left = _DIE_WITH_PARENT_GENERATIONS


def _stop_with_parent(parent: int) -> None:
    """SIGTERM to this process when `parent` (its parent) dies: the worker then stops as
    on any SIGTERM, within the grace."""
    if _prctl is None:
        return  # not Linux: serve's own stop is the only one
    pr_set_pdeathsig = 1
    _prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)  # it died before prctl() took effect


def _remember_parent() -> None:
    global _forking_pid
    _forking_pid = os.getpid()


def _die_with_parent() -> None:
    global _generations_left
    if _generations_left <= 0:
        return
    _generations_left -= 1
    if _prctl is None:
        return  # never: registered once prctl is found
    pr_set_pdeathsig = 1
    _prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != _forking_pid:
        os._exit(1)  # the parent died before prctl() took effect


def _resume_quietly() -> None:
    # No connection may outlive this call: the cluster's processes are forked from this
    # one, and a child closing an inherited PostgreSQL connection ends the parent's too.
    try:
        resume_stalled_runs()
        release_ended_claims()
    finally:
        connections.close_all()
