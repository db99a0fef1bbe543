"""Running a planned run in this process: `evalsite run`, MCP's run_suite and `evalsite pairs
judge` all execute their run through :func:`execute_here`, which owns the run's thread, its
cancel and the release of a no-look run's case data (:mod:`runs.sealed`) when it ends.

The workers (:mod:`runs.engine.tasks`) execute the runs the web and the lab launch; a run
executed here is executed by this process alone, as its one shard.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable

from django.db import OperationalError

from runs import sealed
from runs.engine.runner import PlanRemainder, execute
from runs.models import Run

POLL_S = 0.2


class Stop:
    """A cancel asked for from outside the run's thread (a signal, a cancelled tool call).

    :meth:`ask` may be called from anywhere, a signal handler included; the cancel itself is
    written by :func:`execute_here` on its own thread (never from a handler, which may
    interrupt a query on its connection), and once it is written the run's shard stops
    claiming calls at once rather than at its next look at the run's row."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        # Set when execute_here should look now rather than at its next poll: a stop was
        # asked, or the run's shard has ended.
        self.woken = threading.Event()
        self.written = False

    def ask(self) -> None:
        self.asked.set()
        self.woken.set()

    def write(self, run: Run) -> None:
        """Write the cancel that was asked for, once; a database too busy to take the write
        now is tried again at the next look."""
        if not self.asked.is_set() or self.written:
            return
        try:
            run.request_cancel()  # False for a run that has ended: nothing to do
        except OperationalError:
            return
        self.written = True


def execute_here(
    run: Run,
    *,
    on_progress: Callable[[Run], None] | None = None,
    stop: Stop | None = None,
    poll_s: float = POLL_S,
    rest: PlanRemainder | None = None,
) -> Run:
    """Execute the stored `run` in this process and return it as it ended; `rest` stores
    the rest of its plan beside its first calls (runs.planning.planner.start_plan).

    Its one shard runs on a thread while this one looks every `poll_s`: it writes the cancel
    once `stop` is asked (a stop asked before it starts cancels the run before anything is
    sent) and calls `on_progress(run)` while no stop was asked. A no-look run's case data
    is released when the shard ends, however it ends; what the shard raised is raised here."""
    stop = stop or Stop()
    stop.write(run)
    failure: list[BaseException] = []

    def shard() -> None:
        try:
            execute(run.id, halt=lambda: stop.written, rest=rest)
        except BaseException as error:  # noqa: BLE001 - raised again below, on the caller's thread
            failure.append(error)
        finally:
            sealed.release(run.id)  # a no-look run's case data: gone with its run
            stop.woken.set()  # the caller returns now, not at its next poll

    stop.woken.clear()  # set again when this run's shard ends (or a stop is asked)
    # In the caller's context: what it holds for the command, as the sandbox it probed
    # while planning (runs.engine.sandbox.one_sandbox_probe), holds for the run's scoring.
    context = contextvars.copy_context()
    worker = threading.Thread(target=context.run, args=(shard,), name=f"run-{run.id}", daemon=True)
    worker.start()
    while worker.is_alive():
        if stop.asked.is_set():
            worker.join(poll_s)  # stopping: the cancel is written at each look
        elif stop.woken.wait(poll_s) and not stop.asked.is_set():
            worker.join(poll_s)  # the shard ended: its thread is exiting, the run returns now
        # else a stop was asked during the wait (a short run might end first): its cancel is
        # written now
        stop.write(run)
        if on_progress is not None and not stop.asked.is_set():
            on_progress(run)
    stop.write(run)
    if failure:
        raise failure[0]
    run.refresh_from_db()
    return run
