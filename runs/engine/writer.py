"""A shard's finished calls, written behind the calls in small batches.

Each call's outcome is kept in memory for at most ``FLUSH_S`` (or until ``FLUSH_ROWS`` are
waiting) and then written with the others in one transaction: the cache rows, each row's
fields (only while this shard still holds its claim), the reservations released and the
spend recorded on the run, models that refused a call, an overrun's abort. A call that
stops the run or a model is written at once. An answer is scored before its batch is
written, its verdicts stored in the same row values (:meth:`Scoring.written`), unless it
waits on the sandbox or runs the suite's code (then the run's end scores it).

The crash window this adds: a shard killed outright loses the outcomes it had not written
yet, at most ``FLUSH_S`` worth of calls (and never more than ``FLUSH_ROWS``). Their rows are
still claimed, with their reservations; when the lease runs out they go back to pending and
are called again, the reservations returned, so the run's accounting stays exact: a lost
call is neither counted nor paid for twice in the database (the provider may have billed
it, as it would a call in flight at the kill).
"""

from __future__ import annotations

import asyncio
import contextlib
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, transaction

from runs.engine.outcomes import Outcome
from runs.engine.scoring import Scoring, Unscored
from runs.models import CachedResponse, Call, Run
from runs.models.rows import insert_each

if TYPE_CHECKING:
    from collections.abc import Callable

    from runs.engine.claims import Claims

FLUSH_S = 0.05
FLUSH_ROWS = 200


class Writer:
    """One shard's outcomes waiting to be written, and the task that writes them behind."""

    def __init__(self, claims: Claims, *, db: Callable) -> None:
        self.claims = claims
        self.db = db  # the shard's one thread for database work
        self.waiting: list[Outcome] = []
        self.failure: BaseException | None = None
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._closed = False
        self.scoring: Scoring | None = None  # made as the first answer is written
        self._task = asyncio.create_task(self._write_behind())

    def add(self, outcome: Outcome) -> None:
        self.waiting.append(outcome)
        if outcome.urgent or len(self.waiting) >= FLUSH_ROWS:
            self._wake.set()

    async def flush(self) -> None:
        """Write what is waiting now; raises what writing raised (here or behind)."""
        async with self._lock:
            if self.failure is not None:
                raise self.failure
            batch, self.waiting = self.waiting, []
            if batch:
                try:
                    await self.db(self.write)(batch)
                except BaseException as error:
                    self.failure = error
                    raise

    async def close(self) -> None:
        """Write what is left; then give back whatever this shard still holds without an
        outcome (its calls cancelled when the loop stopped on a fault), so a run that ends
        holds no claim or reservation of this shard's. Not when the database or the disk
        failed: the run stays active, and its claims return when their lease runs out."""
        self._closed = True
        self._wake.set()
        await self._task
        try:
            await self.flush()
        finally:
            if not isinstance(self.failure, DatabaseError | OSError):
                await self.db(self.claims.give_back)()

    async def _write_behind(self) -> None:
        while not self._closed and self.failure is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), FLUSH_S)
            self._wake.clear()
            try:
                await self.flush()
            except BaseException:  # noqa: BLE001 - kept in self.failure, raised by the shard
                return

    def write(self, batch: list[Outcome]) -> None:
        """Store `batch`: its answers scored first, outside the transaction (no lock is held
        while they are), their verdicts written with their rows (:meth:`Scoring.written`)."""
        self._store(batch, self._verdicts(batch))

    def _verdicts(self, batch: list[Outcome]) -> dict[int, dict[str, Any]]:
        """The verdict columns of the batch's done answers scored as they are written (a
        judge call is never scored), by id: the run's scoring made once for the shard."""
        if self.claims.judging:
            return {}
        answers = [
            Unscored(o.call.pk, o.call.task_id, o.call.case_id, o.values.get("text", ""), None)
            for o in batch
            if o.values is not None and o.values.get("status") == Call.Status.DONE
        ]
        if not answers:
            return {}
        if self.scoring is None:
            self.scoring = Scoring(self.claims.run_row)
        return self.scoring.written(answers)

    @transaction.atomic
    def _store(self, batch: list[Outcome], verdicts: dict[int, dict[str, Any]]) -> None:
        claims = self.claims
        run: Run = claims.run_row
        judge = claims.judging
        caches = [o.cache_row for o in batch if o.cache_row is not None]
        insert_each(CachedResponse, caches, ignore_conflicts=True)
        back = [o.call for o in batch if o.values is None]
        if back:
            claims.give_back(back)
        finished = [o for o in batch if o.values is not None]
        kept = claims.finish(
            {
                o.call.pk: o.values | verdicts.get(o.call.pk, {})
                for o in finished
                if o.values is not None
            },
            [o.call for o in finished],
        )
        # A lost claim's reservation was returned by whoever reclaimed it; the spend stands,
        # as reported even above the reservation: what was billed was billed.
        mine = [o for o in finished if o.call.pk in kept]
        run.settle(
            _total(o.reserved for o in mine),
            _total(o.spent for o in finished),
            _total(o.uncached for o in mine),
            judge=judge,
        )
        if any(o.incomplete for o in finished):
            Run.objects.filter(pk=run.pk).update(cost_incomplete=True)
        stopped = {model for o in finished for model in o.stops_models}
        if stopped:
            run.stop_models(stopped)
        overrun = next((o.overrun for o in finished if o.overrun), "")
        if overrun:
            # In the same transaction as the spend, so no shard reserves after it.
            run.finish(Run.Status.ABORTED_OVER_BUDGET, overrun)


def _total(amounts) -> Decimal:
    return sum((amount for amount in amounts if amount), Decimal(0))
