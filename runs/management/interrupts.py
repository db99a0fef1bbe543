"""SIGINT and SIGTERM for a run made in this process (`evalsite run`), whatever their timing.

Before the run is stored, a signal abandons the planning (KeyboardInterrupt: nothing was
stored, nothing spent). While it is being stored (:meth:`Interrupts.holding`), signals are
noted and acted on once the run is known. From then on the first signal asks the run to
cancel, written by :func:`runs.engine.local.execute_here` on the main thread (never from a
handler, which may interrupt a query on its connection); a second one leaves at once, but never
before that write. `timeout` sends its SIGTERM twice (to the process and to its group): the second
arrived before the cancel was written, the command left, and a worker finished the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from evalsite.core.exitcodes import ExitCode
from runs.engine.local import Stop
from runs.models import Run

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts(Stop):
    """Installed for the whole command; `watch(run)` once the run is stored. The run's stop
    (execute_here's `stop`): asked by the first signal."""

    def __init__(self, stderr) -> None:
        super().__init__()
        self.stderr = stderr
        self.count = 0
        self.run: Run | None = None
        self._held = False
        self._leave = False
        self._previous = {signum: signal.signal(signum, self._on_signal) for signum in SIGNALS}

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    @contextlib.contextmanager
    def holding(self):
        """Signals are noted, not acted on, inside the block (where the run is stored and
        handed to watch); execute_here acts on them after it."""
        self._held = True
        try:
            yield
        finally:
            self._held = False
        if self.count and self.run is None:
            raise KeyboardInterrupt  # the block failed before the run was stored

    def watch(self, run: Run) -> None:
        self.run = run

    def write(self, run: Run) -> None:
        """Write the cancel (on the main thread, by execute_here); leave at once when a
        second signal asked that too."""
        super().write(run)
        if self._leave and self.written:
            self._leave_now()

    def _on_signal(self, signum, frame) -> None:
        self.count += 1
        self.ask()
        if self._held:
            return
        if self.run is None:
            raise KeyboardInterrupt
        if self.count > 1:
            self._leave = True
            if self.written:
                self._leave_now()

    def _leave_now(self) -> None:
        self.stderr.write("stopped at once; a worker will close the run")
        sys.stderr.flush()
        os._exit(ExitCode.RUNTIME_ERROR)
