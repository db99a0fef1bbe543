"""Executing a run: claim pending calls, call the providers concurrently, store each one.

A run has phases. *Running*: every answer (task, case, contestant, repeat) is a pending
row. *Judging*: the answers are scored, pairs formed, and every judge call (two orders per
included pair, one grade per graded answer) is a pending row too. *Reporting*: the pairs
are combined and the report is written. Answers and judge calls go through the same engine:
the cache, the reservation against the cap, retries, claims and shards.

One *shard* is one call of :func:`execute`: an asyncio loop that claims pending calls in
batches through its :class:`~runs.engine.claims.Claims` (a conditional UPDATE, so shards
never share a row; the batch's cache hits looked up and its worst cases reserved against
the cap in the same transaction), calls the providers under per-model limits, and hands
each outcome to its writer (:mod:`runs.engine.writer`), which stores them in small batches
behind the calls. A concurrency slot is held for the provider call only, never for a
database round trip. Shards keep going until nothing is pending; the one that wins the
move to the next phase does it. A shard that dies leaves claimed rows, which go back to
pending when their lease expires, and any live shard (or a resumed one) picks them up;
every phase step is idempotent.
Provider keys come from this process's environment, never from the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connections

from evalsite.core.keys import held_secrets
from evalsite.core.no_look import NO_WORKER, sealed_failure
from evalsite.core.pacing import MAX_ATTEMPTS, Limits, ModelGate, backoff_delay
from evalsite.core.plan import WorstCase
from evalsite.core.pricing import PriceRows
from evalsite.core.providers import (
    Completion,
    Provider,
    ProviderError,
    RepliesFileError,
    ScriptedReplies,
    build_contestant_providers,
    make_client,
    prepare_client,
)
from evalsite.core.providers.http_json import over_http
from runs import sealed
from runs.engine import outcomes, phases
from runs.engine.claims import POLL_S, Claim, Claims
from runs.engine.judging import prepare_judging
from runs.engine.outcomes import Outcome
from runs.engine.writer import Writer
from runs.models import Answer, CachedResponse, Call, Endpoint, Run
from runs.models.run import calls_in_flight
from runs.models.suites import blob_store
from runs.sealed import Sealed

if TYPE_CHECKING:
    import httpx

    from evalsite.core.providers.http_clients import HttpClient

db = sync_to_async(thread_sensitive=True)
LATER = "runs.engine.later"  # what a run uses once its answers are in (see there)
log = logging.getLogger(__name__)
# Calls claimed ahead by a shard whose calls are all answered at once (fake, scripted,
# given): one writer batch (runs.engine.writer) a claim.
INSTANT_AHEAD = 200


class PlanRemainder(Protocol):
    """The rest of a run's plan, held by the process that planned it
    (runs.planning.planner.PlanRest): stored a batch at a time, on the shard's database
    thread, the last batch marking the plan whole."""

    def store_next(self) -> bool:
        """Store the next batch; whether any is left."""
        ...


def execute(
    run_id: str,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    shards: int = 1,
    index: int = 0,
    halt: Callable[[], bool] | None = None,
    rest: PlanRemainder | None = None,
) -> Run:
    """Run one shard of `run_id` to the end of the run's pending work; return the run.

    Once `halt()` is true (its process is stopping) the shard claims nothing more: its calls
    in flight finish and are written, the ones it has not sent go back to pending, and it
    returns leaving the run to the other shards (or the stalled-run sweep). Shard `index` of
    `shards` makes its part of the run's per-model limit (:meth:`Limits.share`).

    `rest` is the rest of the run's plan, for a run planned in this process: the shard
    stores it on its database thread once its first calls are claimed (before its first
    claim when no call waits), and before it leaves the answers, however the run goes."""
    shard = Shard(run_id, transport=transport, shards=shards, index=index, halt=halt, rest=rest)
    try:
        asyncio.run(shard.run())
    finally:
        close_old_connections()
        if shard.importing is not None:
            shard.importing.join()  # imported before it was needed, unless the run ended first
    return Run.objects.get(pk=run_id)


class Setup:
    """What a shard works on a run with, read as it starts: the run's options and prices,
    the key values no stored text may quote, a provider for each contestant and the judge,
    and a gate a model holding the shard's `share` of the per-model limit."""

    def __init__(self, run: Run, share: Limits) -> None:
        self.options = options = run.stored_options
        self.secrets = tuple(
            held_secrets(os.environ, Endpoint.objects.values_list("key_env_var", flat=True))
        )
        self.rows = PriceRows(p.to_row() for p in run.price_table.prices.all())
        replies = ScriptedReplies.load(options.replies) if options.replies else None
        judge_model = run.judge.get("model")
        built = build_contestant_providers(
            [*run.contestants, *([judge_model] if judge_model else [])],
            env=os.environ,
            endpoints=Endpoint.objects.configs(),
            replies=replies,
            fake=options.fake,
            blobs=blob_store(),
        )
        self.providers: dict[str, Provider] = {c: built[c] for c in run.contestants}
        self.judge: Provider | None = built[judge_model] if judge_model else None
        models = dict.fromkeys(c.partition("@")[0] for c in built)  # one gate a model
        self.gates = {model: ModelGate(share) for model in models}
        self.concurrency = sum(gate.limits.max_concurrency for gate in self.gates.values())

    def provider(self, call: Call) -> Provider:
        if isinstance(call, Answer):
            return self.providers[call.contestant]
        if self.judge is None:  # a run without a judge queues no judge call
            raise LookupError(f"judge call {call.pk} of run {call.run_id}, which has no judge")
        return self.judge

    def cached(self, call: Call, hit: CachedResponse) -> Outcome:
        return outcomes.cached(call, hit, self.provider(call), self.rows.get(call.model))

    def done(self, claim: Claim, completion: Completion, latency: int, sealed) -> Outcome:
        call = claim.call
        return outcomes.done(
            call,
            self.provider(call),
            completion,
            latency_ms=latency,
            worst=claim.worst_case(),
            row=self.rows.get(call.model),
            secrets=self.secrets,
            sealed=sealed,
        )

    @property
    def over_http(self) -> bool:
        return over_http([*self.providers.values(), self.judge])

    @property
    def waits(self) -> bool:
        """Does any call wait on something (a network, a process, a simulated latency)? A
        run whose calls are all answered here at once (fake, scripted, given) does not."""
        return any(p.waits for p in [*self.providers.values(), self.judge] if p is not None)

    def stopped_by(self, model: str, error: ProviderError) -> tuple[str, ...]:
        """The models `error` stops: `model`, and for a refused key every model of its
        provider (``openai/…``, an endpoint's name)."""
        provider = model.partition("/")[0]
        siblings = [m for m in self.gates if m.partition("/")[0] == provider]
        return tuple(sorted(siblings)) if error.stops_provider else (model,)


def _fail(run_id: str, error: Exception, *, sealed: bool) -> None:
    if not sealed:
        log.error("run %s failed", run_id, exc_info=error)
    else:  # its text and traceback may quote case data: the type and place only
        log.error("no-look run %s failed: %s", run_id, sealed_failure(error))
    run = Run.objects.get(pk=run_id)
    phase = run.status if run.is_active else "its last step"
    reason = sealed_failure(error) if sealed else f"{type(error).__name__}: {error}"
    reason = reason[:1000]
    run.finish(Run.Status.FAILED, f"failed while {phase}: {reason}")


def _not_held(run: Run) -> None:
    """A no-look run whose case data this process does not hold: closed if it was asked
    to cancel, else left to the process that holds it (or `evalsite run --resume`)."""
    if run.cancel_requested:
        run.finish(Run.Status.CANCELLED, "cancelled; finished answers are kept")
    else:
        log.warning("not working on run %s: %s", run.pk, NO_WORKER)


class Shard:
    """One shard of a run: the asyncio loop that claims calls (through its
    :class:`~runs.engine.claims.Claims`), makes them under per-model limits, and hands
    their outcomes to its writer; between phases it makes the moves in
    :mod:`runs.engine.phases`."""

    def __init__(
        self, run_id: str, *, transport=None, shards: int = 1, index: int = 0, halt=None, rest=None
    ):
        self.run_id = run_id
        self.halt: Callable[[], bool] = halt or (lambda: False)
        self.rest: PlanRemainder | None = rest  # the plan's rows still to store
        self.storing: asyncio.Task | None = None
        self.importing: threading.Thread | None = None  # LATER, beside the first calls
        self.transport = transport
        self.part = (max(1, shards), index)  # this shard's part of the run's limits
        self.stopping = False
        self.stopped_models: set[str] = set()
        self.stop_reasons: dict[str, str] = {}  # why, for the models this shard stopped
        self.first_calls: dict[str, asyncio.Event] = {}
        self.rng = random.Random()
        self._checked_at = 0.0
        self.setup: Setup
        self.writer: Writer  # a new one for each phase's calls (_loop)
        self.failure: BaseException | None = None
        self.sealed: Sealed | None = sealed.held(run_id)  # a no-look run's case data
        self.claims = Claims(run_id, sealed=self.sealed)

    # --- the loop --------------------------------------------------------------------------

    async def run(self) -> None:
        """The run's phases; an exception in one fails the run with its reason (a run is
        never handed out again and again for a fault that would only repeat)."""
        try:
            await self._phases()
        except (DatabaseError, OSError):
            raise  # the database or the disk: another shard or a retry may well succeed
        except Exception as error:
            await db(_fail)(self.run_id, error, sealed=self.sealed is not None)
        finally:
            await db(connections.close_all)()

    async def _phases(self) -> None:
        """Each phase step returns the phase this shard goes on with, or None to stop."""
        phase = await db(self._prepare)()
        if phase is not None and self.claims.run_row.cancel_requested:
            phase = None  # asked to cancel while nobody worked on it: close it below
        if phase in (Run.Status.RUNNING, Run.Status.JUDGING):
            async with self._client() as client:
                phase = await self._calls(phase, client)
        await self._plan_stored()  # the run's report, whole or partial, is of its whole plan
        if phase == Run.Status.REPORTING:
            await db(phases.report)(self.run_id)
        await db(_close_stopped)(self.claims)

    def _client(self) -> contextlib.AbstractAsyncContextManager[HttpClient | None]:
        """The shared HTTP client; none for a run whose providers all answer in this process
        (fake, scripted, command, given), which take none: aiohttp is then never imported."""
        if self.transport is None and not self.setup.over_http:
            return contextlib.nullcontext(None)
        return make_client(transport=self.transport, max_connections=self.setup.concurrency)

    async def _calls(self, phase: str, client: HttpClient | None) -> str | None:
        """The answers, then the judge calls: the phase after them, or None."""
        after: str | None = phase
        if phase == Run.Status.RUNNING:
            await self._loop(client)
            if self.halt():
                return None  # this process is stopping: the run goes on elsewhere
            after = await db(phases.answers_over)(self.run_id, self.setup.judge)
            after = after or await _join_judging(self.run_id)
        else:
            # resuming a run that stopped while judging: complete its preparation
            # (idempotent), then the judge calls still pending
            await db(prepare_judging)(self.claims.run_row, self.setup.judge)
        if after != Run.Status.JUDGING:
            return after
        self.claims.turn_to_judge_calls()
        await self._loop(client)
        return None if self.halt() else await db(phases.judging_over)(self.run_id)

    def _prepare(self) -> str | None:
        run = self.claims.run_row = Run.objects.select_related("price_table").get(pk=self.run_id)
        if not run.is_active:
            return None
        if run.no_look and self.sealed is None:
            _not_held(run)
            return None
        limit = Limits(calls_in_flight(run.stored_options.concurrency))
        share = limit.share(*self.part)
        if share.idle:  # more shards than the limit has calls: the others make them all
            log.info("shard %s of run %s has no call to make", self.part[1], self.run_id)
            return None
        self.stopped_models = set(run.stopped_models)
        try:
            self.setup = Setup(run, share)
        except (ProviderError, RepliesFileError) as error:
            # This process cannot make the calls (e.g. a worker without the key): end the
            # run with the reason rather than leave it running with nobody to finish it.
            run.finish(Run.Status.FAILED, f"this worker cannot run it: {error}")
            return None
        self.claims.use(self.setup.provider, self.setup.rows, cache=not self.setup.options.no_cache)
        if self.transport is None and self.setup.over_http:
            prepare_client()  # ready to call before the run is marked running
        run.mark_running()
        return run.status

    async def _loop(self, client: HttpClient | None) -> None:
        """Keep every model's slots busy with claimed calls, a few claimed ahead, until
        nothing is pending here or in another shard."""
        in_flight: set[asyncio.Task] = set()
        # Claimed ahead of the free slots, so a slot never waits for a claim: a quarter to
        # a half of the slots again (a batch of at least a quarter of them per claim).
        ahead = self.setup.concurrency + max(4, self.setup.concurrency // 2)
        low = self.setup.concurrency + max(2, self.setup.concurrency // 4)
        if not self.setup.waits:
            # No slot is held for long: claims of a few calls each were most of the work
            # (a claim statement a ~20 calls, 190 of them for 4,000 fake answers).
            ahead, low = INSTANT_AHEAD, INSTANT_AHEAD // 2
            # and no network wait to store the rest of the plan behind: stored first, whole,
            # it is not spread between the claims and writes that would take turns with it
            await self._plan_stored()
        changed = asyncio.Event()

        def finished(task: asyncio.Task) -> None:
            in_flight.discard(task)
            if not task.cancelled() and task.exception() is not None and self.failure is None:
                self.failure = task.exception()
            changed.set()

        self.writer = Writer(self.claims, db=db)
        try:
            while self.failure is None and self.writer.failure is None:
                changed.clear()  # before the claim: calls that end during it wake the wait
                await self._check_stop()
                if not self.stopping and len(in_flight) <= low and self.claims.may_claim():
                    for task in await self._claim_calls(ahead - len(in_flight), client):
                        in_flight.add(task)
                        task.add_done_callback(finished)
                    self._beside_first_calls()
                if in_flight:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), POLL_S)
                    continue
                if self.claims.may_claim() and not self.stopping:
                    continue  # the last batch was all cache hits: more may be pending
                await self.writer.flush()
                await self._plan_stored()  # more to claim once it is
                if self.stopping or not await db(self.claims.others_working)():
                    break
                await asyncio.sleep(POLL_S)
            failure = self.failure or self.writer.failure  # the writer's: the database's
            if failure is not None:
                raise failure
        finally:
            for task in list(in_flight):
                task.cancel()
            await asyncio.gather(*in_flight, return_exceptions=True)
            await self.writer.close()
            if self.storing is not None:  # a batch on the database thread ends there anyway
                await asyncio.gather(self.storing, return_exceptions=True)

    def _beside_first_calls(self) -> None:
        """The first calls are claimed: a model's first call goes alone, and its network
        wait is the run's one idle moment before the fan-out. What the run needs only
        later starts now, not before the first call: the rest of its plan stored, and what
        it uses once its answers are in imported (:data:`LATER`, on a thread of its own)."""
        self._store_plan_soon()
        if self.importing is None and LATER not in sys.modules:
            self.importing = threading.Thread(target=_import, args=(LATER,), name=f"import-{LATER}")
            self.importing.start()  # not a daemon: see execute

    def _store_plan_soon(self) -> None:
        """Start storing the rest of the run's plan (once): a batch at a time on the
        database thread, so a claim or a write waits one batch at most."""
        if self.rest is not None and self.storing is None:
            self.storing = asyncio.ensure_future(self._store_plan(self.rest))

    async def _store_plan(self, rest: PlanRemainder) -> None:
        while await db(rest.store_next)():
            pass

    async def _plan_stored(self) -> None:
        """The run's plan stored whole, started now if it was not; a failure raised (the
        run was failed by it: runs.planning.planner.PlanRest)."""
        self._store_plan_soon()
        if self.storing is not None:
            await self.storing

    async def _claim_calls(self, limit: int, client: HttpClient | None) -> list[asyncio.Task]:
        claimed = await db(self.claims.claim)(limit)
        for claim in claimed:
            if claim.hit is not None:
                self.writer.add(self.setup.cached(claim.call, claim.hit))
        return [asyncio.create_task(self._answer(c, client)) for c in claimed if c.hit is None]

    async def _check_stop(self) -> None:
        """Every poll: has the run stopped (cancelled, aborted, failed) or has another
        shard seen a model refuse its calls? Or is this process stopping?"""
        if self.halt():
            self.stopping = True
        now = time.monotonic()
        if self.stopping or now - self._checked_at < POLL_S:
            return
        self._checked_at = now
        state = await db(_run_state)(self.run_id)
        if state is None or state["status"] not in Run.ACTIVE or state["cancel_requested"]:
            self.stopping = True
        else:
            self.stopped_models |= set(state["stopped_models"])

    # --- one call ----------------------------------------------------------------------------

    async def _answer(self, claim: Claim, client: HttpClient | None) -> None:
        call = claim.call
        if call.model in self.stopped_models:
            why = self.stop_reasons.get(call.model, "")
            self.writer.add(outcomes.skipped(call, claim.reserved or Decimal(0), why))
            return
        async with self.setup.gates[call.model]:
            reply = await self._call(claim, client)
        # the slot is free again before the outcome is built and handed to the writer
        if isinstance(reply, Outcome):
            self.writer.add(reply)
            return
        outcome = self.setup.done(claim, *reply, self.sealed)
        if outcome.overrun:
            self.stopping = True  # nothing more starts here; the writer aborts the run
        self.writer.add(outcome)

    async def _call(self, claim: Claim, client) -> Outcome | tuple[Completion, int]:
        """The call with its retries, once it has its reservation: its completion and
        latency, or the outcome without one. A model's first call goes alone: if it is
        refused (401, 400), no other call to that model has started."""
        call = claim.call
        worst = claim.worst_case()
        if claim.reserved is None and not self.stopping and await self._reserve(call, worst):
            claim.reserved = worst.cost_usd
        if self.stopping or claim.reserved is None:
            return outcomes.given_back(call)
        first = self.first_calls.get(call.model)
        if first is None:
            self.first_calls[call.model] = first = asyncio.Event()
            try:
                return await self._attempts(claim, client)
            finally:
                # The calls waiting for it go on only if the run has not stopped meanwhile
                # (an overrun in any shard, a cancel): looked up once, for all of them.
                self._checked_at = 0.0
                try:
                    await self._check_stop()
                finally:
                    first.set()
        await first.wait()
        if call.model in self.stopped_models:
            return outcomes.skipped(call, worst.cost_usd, self.stop_reasons.get(call.model, ""))
        if self.stopping:
            return outcomes.given_back(call)
        return await self._attempts(claim, client)

    async def _attempts(self, claim: Claim, client) -> Outcome | tuple[Completion, int]:
        call, provider = claim.call, self.setup.provider(claim.call)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if await self.claims.taken_over(claim, db=db):
                return outcomes.given_back(call)  # its row is another shard's: not sent
            started = time.monotonic()
            try:
                completion = await provider.complete(claim.request, client)
            except ProviderError as error:
                if error.retryable and attempt < MAX_ATTEMPTS and not self.stopping:
                    await asyncio.sleep(backoff_delay(attempt, error.retry_after, rng=self.rng))
                    self._checked_at = 0.0
                    await self._check_stop()
                    if not self.stopping:
                        continue
                    return outcomes.given_back(call)
                stops = self._stop(call.model, error) if error.stops_model else ()
                sealed = self.sealed is not None
                return outcomes.failed(
                    call, error, claim.worst_case().cost_usd, sealed=sealed, stops=stops
                )
            latency = completion.simulated_latency_ms or int((time.monotonic() - started) * 1000)
            return completion, latency
        raise AssertionError("the last attempt returns: it is never retried")

    def _stop(self, model: str, error: ProviderError) -> tuple[str, ...]:
        """The models `error` stops, noted here so no call to them starts: `model`, and for
        a refused key every model of its provider (``openai/…``, an endpoint's name)."""
        stops = self.setup.stopped_by(model, error)
        why = f"{error.kind.value} on a call to {model}"
        for stopped in stops:
            self.stop_reasons.setdefault(stopped, why)
        self.stopped_models.update(stops)
        return stops

    async def _reserve(self, call: Call, worst: WorstCase) -> bool:
        """Reserve the worst case (:meth:`Claims.reserve`); this shard stops when it cannot."""
        stopping, stop = (lambda: self.stopping), (lambda: setattr(self, "stopping", True))
        flush = self.writer.flush
        return await self.claims.reserve(
            call, worst, db=db, stopping=stopping, stop=stop, flush=flush
        )


def _import(module: str) -> None:
    with contextlib.suppress(Exception):  # the run meets the same error where it imports it
        importlib.import_module(module)


def _close_stopped(claims: Claims) -> None:
    claims.reclaim(now=True)
    phases.close_stopped(claims.run_id, claims.calls)


async def _join_judging(run_id: str) -> str | None:
    """JUDGING once the shard that moved the run there has queued the judge calls, so
    every shard judges with its share of the concurrency; None when the run goes
    nowhere this shard is needed (no judge calls, stopped, or waited a lease)."""
    deadline = time.monotonic() + settings.EVALSITE_CLAIM_LEASE_S
    while time.monotonic() < deadline:
        state = await db(phases.judging_state)(run_id)
        if state != phases.PREPARING:
            return state
        await asyncio.sleep(POLL_S / 2)
    return None


def _run_state(run_id: str) -> Mapping[str, Any] | None:
    """What a shard polls of its run: has it ended or been asked to cancel, and which
    models have been stopped."""
    run = Run.objects.filter(pk=run_id)
    return run.values("status", "cancel_requested", "stopped_models").first()
