"""The sandbox this process's execution checks run in, and the probe that finds it.

Planning asks whether there is one (a run with execution checks is refused without it, a
dry run and `validate` say so); scoring asks for it to run the checks in. Each ask probes
bubblewrap (a job in the sandbox: 40 to 60 ms, most of it waiting on the kernel), except
inside :func:`one_sandbox_probe`, where the first ask probes and the others get its answer.
A server or a worker probes on every ask.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings

from evalsite.core.scoring.sandbox import Sandbox, SandboxUnavailable, detect_sandbox


class _OneProbe:
    """One probe's answer: made by the first ask, from whichever thread asks first, and
    given to every ask after it; an ask while it is being made waits for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: list[Sandbox | None] = []
        self._thread: threading.Thread | None = None

    def answer(self) -> Sandbox | None:
        with self._lock:
            if not self._found:
                self._found.append(_probe())
            return self._found[0]

    def soon(self) -> None:
        """Make the probe on a thread of its own, beside what the caller does next; the
        next ask waits for it (or makes it, if the thread has not started yet)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self.answer, name="sandbox-probe")
            self._thread.start()

    def settle(self) -> None:
        """Wait for the probe's thread, if one was started: its job (a temporary folder,
        a memory cgroup, a bubblewrap process) is cleaned up before the block ends, even
        when nothing asked for its answer (the block raised)."""
        if self._thread is not None:
            self._thread.join()


_ONE_PROBE: ContextVar[_OneProbe | None] = ContextVar("one_sandbox_probe", default=None)


@contextmanager
def one_sandbox_probe() -> Iterator[None]:
    """In this block, :func:`sandbox_or_none` probes once and answers the same after, in
    this thread and in the threads that run in a copy of its context (a run's shard:
    runs.engine.local). One command asks more than once: `evalsite validate` for its
    warning and again in its dry-run plan, `evalsite run` in planning and in scoring."""
    probe = _OneProbe()
    token = _ONE_PROBE.set(probe)
    try:
        yield
    finally:
        _ONE_PROBE.reset(token)
        probe.settle()


def probe_soon() -> None:
    """Inside :func:`one_sandbox_probe`, make its probe now on a thread of its own, beside
    what the caller does before it asks (nothing outside one: each ask probes)."""
    probe = _ONE_PROBE.get()
    if probe is not None:
        probe.soon()


def sandbox_or_none() -> Sandbox | None:
    """The sandbox execution checks run in, or None when there is none (see
    :func:`~evalsite.core.scoring.sandbox.detect_sandbox`)."""
    probe = _ONE_PROBE.get()
    return probe.answer() if probe is not None else _probe()


def _probe() -> Sandbox | None:
    try:
        return detect_sandbox(opt_out=settings.EVALSITE_UNSAFE_NO_SANDBOX)
    except SandboxUnavailable:
        return None
