"""Supervising `evalsite worker`'s process: its django-q2 cluster, the signals that stop it
within a grace, and the processes that die with their parents (signals, prctl, /proc).

The jobs the cluster runs are in :mod:`runs.engine.tasks`; this module only starts, watches
and stops the processes that run them (the `worker` command runs it, `serve` starts that).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connections
from django_q.cluster import Cluster

from runs.engine.tasks import release_ended_claims, resume_stalled_runs, stop_flag


def run_worker(*, stop_with: int | None = None) -> None:
    """Run a django-q2 cluster until SIGINT or SIGTERM, looking for stalled runs every lease
    (a shard killed with its worker is redelivered by the ORM broker only after
    Q_CLUSTER["retry"], and never by the Redis broker).

    After the first signal the cluster has EVALSITE_WORKER_STOP_GRACE_S to stop; what is
    left of it then is killed (a busy shard's claims go back to pending when their lease
    expires), so the worker stops in bounded time however the signal arrives.

    With `stop_with`, the pid of the process that started this one (`serve`), the worker
    is sent SIGTERM when that process dies, however it dies (Linux)."""
    period = max(1.0, min(60.0, settings.EVALSITE_CLAIM_LEASE_S))
    halt = stop_flag()
    _resume_quietly()
    _cluster_dies_with_its_parents()
    if stop_with is not None:
        _stop_with_parent(stop_with)
    cluster = Cluster()
    stop = _StopOnSignals(cluster, grace=settings.EVALSITE_WORKER_STOP_GRACE_S, halt=halt)
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

    def __init__(self, cluster: Cluster, *, grace: float, halt: mmap.mmap) -> None:
        self.cluster = cluster
        self.grace = grace
        self.halt = halt  # the shards' stop flag (runs.engine.tasks.stop_flag)
        self.requested = False
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        if self.requested:
            return
        self.requested = True
        self.halt[0] = 1
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
