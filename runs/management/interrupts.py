"""SIGINT and SIGTERM for a run made in this process (`evalsite run`), whatever their timing.

Before the run is stored, a signal abandons the planning (KeyboardInterrupt: nothing was
stored, nothing spent). While it is being stored (:meth:`Interrupts.holding`), signals are
noted and acted on once the run is known. From then on the first signal asks the run to
cancel, written by :meth:`Interrupts.check` on the main thread (never from a handler, which
may interrupt a query on its connection); a second one leaves at once, but never before that
write. `timeout` sends its SIGTERM twice (to the process and to its group): the second
arrived before the cancel was written, the command left, and a worker finished the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

from django.db import OperationalError

from evalsite.core.exitcodes import ExitCode
from runs.models import Run

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """Installed for the whole command; `watch(run)` once the run is stored."""

    def __init__(self, stderr) -> None:
        self.stderr = stderr
        self.count = 0
        self.asked = threading.Event()  # set by the first signal
        self.run: Run | None = None
        self.cancel_written = False
        self._held = False
        self._leave = False
        self._previous = {signum: signal.signal(signum, self._on_signal) for signum in SIGNALS}

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    @contextlib.contextmanager
    def holding(self):
        """Signals are noted, not acted on, inside the block (where the run is stored and
        handed to watch); check() acts on them after it."""
        self._held = True
        try:
            yield
        finally:
            self._held = False
        if self.count and self.run is None:
            raise KeyboardInterrupt  # the block failed before the run was stored

    def watch(self, run: Run) -> None:
        self.run = run

    def wait_or_join(self, thread: threading.Thread, timeout: float) -> None:
        """Wait for `thread` to end, up to `timeout`; a signal not yet acted on ends the
        wait at once (a short run would otherwise end before its cancel is written)."""
        if self.asked.is_set():
            thread.join(timeout)
        else:
            self.asked.wait(timeout)

    def check(self) -> None:
        """On the main thread, often: write the cancel a signal asked for; leave when a second
        signal asked that too. A database too busy to take the write now is tried again at
        the next check."""
        if not self.count or self.run is None:
            return
        if not self.cancel_written:
            try:
                self.run.request_cancel()  # False for a run that has ended: nothing to do
            except OperationalError:
                return
            self.cancel_written = True
        if self._leave:
            self._leave_now()

    def _on_signal(self, signum, frame) -> None:
        self.count += 1
        self.asked.set()
        if self._held:
            return
        if self.run is None:
            raise KeyboardInterrupt
        if self.count > 1:
            self._leave = True
            if self.cancel_written:
                self._leave_now()

    def _leave_now(self) -> None:
        self.stderr.write("stopped at once; a worker will close the run")
        sys.stderr.flush()
        os._exit(ExitCode.RUNTIME_ERROR)
