"""Executing a run: claim pending calls, call the providers concurrently, store each one.

A run has phases. *Running*: every answer (task, case, contestant, repeat) is a pending
row. *Judging*: the answers are scored, pairs formed, and every judge call (two orders per
included pair, one grade per graded answer) is a pending row too. *Reporting*: the pairs
are combined and the report is written. Answers and judge calls go through the same engine:
the cache, the reservation against the cap, retries, claims and shards.

One *shard* is one call of :func:`execute`: an asyncio loop that claims pending calls in
batches (a conditional UPDATE, so shards never share a row; the batch's cache hits looked
up and its worst cases reserved against the cap in the same transaction), calls the
providers under per-model limits, and hands each outcome to its writer
(:mod:`runs.engine.writer`), which stores them in small batches behind the calls. A concurrency
slot is held for the provider call only, never for a database round trip. Shards keep
going until nothing is pending; the one that wins the move to the next phase does it. A
shard that dies leaves claimed rows, which go back to pending when their lease expires,
and any live shard (or a resumed one) picks them up; every phase step is idempotent.
Provider keys come from this process's environment, never from the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

import httpx
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connections, transaction

from evalsite.core.keys import held_secrets
from evalsite.core.no_look import NO_WORKER, sealed_failure
from evalsite.core.pacing import MAX_ATTEMPTS, Limits, ModelGate, backoff_delay
from evalsite.core.plan import WorstCase, worst_case
from evalsite.core.pricing import PriceRow
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
from evalsite.core.providers.base import Request
from evalsite.core.providers.http_json import HttpAdapter
from runs import sealed
from runs.engine import outcomes, phases
from runs.engine.judging import prepare_judging
from runs.engine.outcomes import Outcome
from runs.engine.writer import Writer
from runs.models import Answer, CachedResponse, Call, Endpoint, Judgement, Run
from runs.models.suites import blob_store
from runs.planning.planner import endpoint_configs
from runs.sealed import Sealed

db = sync_to_async(thread_sensitive=True)
log = logging.getLogger(__name__)
POLL_S = 0.25
RESERVE_WAIT_S = 300.0


@dataclass
class Claim:
    """A call this shard claimed, with its request, its cache hit if any, its worst case
    and what is reserved for it (None until it is reserved)."""

    call: Call
    request: Request
    hit: CachedResponse | None = None
    worst: WorstCase | None = None
    reserved: Decimal | None = None
    at: float = field(default_factory=lambda: time.monotonic())  # when this shard claimed it


def execute(
    run_id: str,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    shards: int = 1,
    halt: Callable[[], bool] | None = None,
) -> Run:
    """Run one shard of `run_id` to the end of the run's pending work; return the run.

    Once `halt()` is true (its process is stopping) the shard claims nothing more: its calls
    in flight finish and are written, the ones it has not sent go back to pending, and it
    returns leaving the run to the other shards (or the stalled-run sweep)."""
    shard = Shard(run_id, transport=transport, shards=shards, halt=halt)
    try:
        asyncio.run(shard.run())
    finally:
        close_old_connections()
    return Run.objects.get(pk=run_id)


class Shard:
    """One shard of a run: the asyncio loop that claims calls, makes them under per-model
    limits, and hands their outcomes to its writer; between phases it makes the moves in
    :mod:`runs.engine.phases`."""

    def __init__(self, run_id: str, *, transport=None, shards: int = 1, halt=None):
        self.run_id = run_id
        self.halt: Callable[[], bool] = halt or (lambda: False)
        self.token = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.transport = transport
        self.shards = max(1, shards)
        self.stopping = False
        self.stopped_models: set[str] = set()
        self.stop_reasons: dict[str, str] = {}  # why, for the models this shard stopped
        self.rng = random.Random()
        self._checked_at = 0.0
        self._reclaimed_at = 0.0
        self._exhausted_at = -POLL_S
        self.calls: type[Call] = Answer
        self.judge: Provider | None = None
        self.db = db  # the one thread the shard's database work runs on (the writer's too)
        self.writer: Writer | None = None
        self.failure: BaseException | None = None
        self.sealed: Sealed | None = sealed.held(run_id)  # a no-look run's case data

    @property
    def judging(self) -> bool:
        return self.calls is Judgement

    # --- the loop --------------------------------------------------------------------------

    async def run(self) -> None:
        """The run's phases; an exception in one fails the run with its reason (a run is
        never handed out again and again for a fault that would only repeat)."""
        try:
            await self._phases()
        except (DatabaseError, OSError):
            raise  # the database or the disk: another shard or a retry may well succeed
        except Exception as error:
            if self.sealed is None:
                log.exception("run %s failed", self.run_id)
            else:  # its text and traceback may quote case data: the type and place only
                log.error("no-look run %s failed: %s", self.run_id, sealed_failure(error))
            await db(self._fail)(error)
        finally:
            await db(connections.close_all)()

    def _fail(self, error: Exception) -> None:
        run = Run.objects.get(pk=self.run_id)
        phase = run.status if run.is_active else "its last step"
        reason = sealed_failure(error) if self.sealed else f"{type(error).__name__}: {error}"
        reason = reason[:1000]
        run.finish(Run.Status.FAILED, f"failed while {phase}: {reason}")

    async def _phases(self) -> None:
        """Each phase step returns the phase this shard goes on with, or None to stop."""
        phase = await db(self._prepare)()
        if phase is not None and self.run_row.cancel_requested:
            phase = None  # asked to cancel while nobody worked on it: close it below
        if phase in (Run.Status.RUNNING, Run.Status.JUDGING):
            async with make_client(
                transport=self.transport, max_connections=self.concurrency
            ) as client:
                phase = await self._calls(phase, client)
        if phase == Run.Status.REPORTING:
            await db(phases.report)(self.run_id)
        await db(self._close_stopped)()

    async def _calls(self, phase: str, client: httpx.AsyncClient) -> str | None:
        """The answers, then the judge calls: the phase after them, or None."""
        if phase == Run.Status.RUNNING:
            await self._loop(client)
            if self.halt():
                return None  # this process is stopping: the run goes on elsewhere
            phase = await db(phases.answers_over)(self.run_id, self.judge)
            phase = phase or await self._join_judging()
        else:
            # resuming a run that stopped while judging: complete its preparation
            # (idempotent), then the judge calls still pending
            await db(prepare_judging)(self.run_row, self.judge)
        if phase != Run.Status.JUDGING:
            return phase
        self.calls = Judgement
        await self._loop(client)
        return None if self.halt() else await db(phases.judging_over)(self.run_id)

    def _prepare(self) -> str | None:
        self.run_row = Run.objects.select_related("price_table").get(pk=self.run_id)
        if not self.run_row.is_active:
            return None
        if self.run_row.no_look and self.sealed is None:
            return self._not_held()
        self.options = self.run_row.stored_options
        self.stopped_models = set(self.run_row.stopped_models)
        self.secrets = held_secrets(
            os.environ, Endpoint.objects.values_list("key_env_var", flat=True)
        )
        self.rows: dict[str, PriceRow] = {
            p.model: p.to_row() for p in self.run_row.price_table.prices.all()
        }
        try:
            self._build_providers()
        except (ProviderError, RepliesFileError) as error:
            # This process cannot make the calls (e.g. a worker without the key): end the
            # run with the reason rather than leave it running with nobody to finish it.
            self.run_row.finish(Run.Status.FAILED, f"this worker cannot run it: {error}")
            return None
        providers = [*self.providers.values(), self.judge]
        if self.transport is None and any(isinstance(p, HttpAdapter) for p in providers):
            prepare_client()  # ready to call before the run is marked running
        self.run_row.mark_running()
        return self.run_row.status

    def _not_held(self) -> None:
        """A no-look run whose case data this process does not hold: closed if it was asked
        to cancel, else left to the process that holds it (or `evalsite run --resume`)."""
        if self.run_row.cancel_requested:
            self.run_row.finish(Run.Status.CANCELLED, "cancelled; finished answers are kept")
        else:
            log.warning("not working on run %s: %s", self.run_id, NO_WORKER)
        return None

    def _build_providers(self) -> None:
        options = self.options
        replies = ScriptedReplies.load(options.replies) if options.replies else None
        contestants = self.run_row.contestants
        judge_model = self.run_row.judge.get("model")
        built = build_contestant_providers(
            [*contestants, *([judge_model] if judge_model else [])],
            env=os.environ,
            endpoints=endpoint_configs(),
            replies=replies,
            fake=options.fake,
            blobs=blob_store(),
        )
        self.providers: dict[str, Provider] = {c: built[c] for c in contestants}
        self.judge = built[judge_model] if judge_model else None
        limits = Limits(options.concurrency or settings.EVALSITE_MAX_CONCURRENCY)
        models = dict.fromkeys(c.partition("@")[0] for c in built)  # one gate a model
        self.gates = {model: ModelGate(limits.share(self.shards)) for model in models}
        self.first_calls: dict[str, asyncio.Event] = {}
        self.concurrency = sum(gate.limits.max_concurrency for gate in self.gates.values())

    def _provider(self, call: Call) -> Provider:
        return self.judge if call.is_judge_call else self.providers[call.contestant]

    async def _loop(self, client: httpx.AsyncClient) -> None:
        """Keep every model's slots busy with claimed calls, a few claimed ahead, until
        nothing is pending here or in another shard."""
        in_flight: set[asyncio.Task] = set()
        # Claimed ahead of the free slots, so a slot never waits for a claim: a quarter to
        # a half of the slots again (a batch of at least a quarter of them per claim).
        ahead = self.concurrency + max(4, self.concurrency // 2)
        low = self.concurrency + max(2, self.concurrency // 4)
        changed = asyncio.Event()

        def finished(task: asyncio.Task) -> None:
            in_flight.discard(task)
            if not task.cancelled() and task.exception() is not None and self.failure is None:
                self.failure = task.exception()
            changed.set()

        self.writer = Writer(self)
        try:
            while self.failure is None and self.writer.failure is None:
                changed.clear()  # before the claim: calls that end during it wake the wait
                await self._check_stop()
                if not self.stopping and len(in_flight) <= low and self._may_claim():
                    for task in await self._claim_calls(ahead - len(in_flight), client):
                        in_flight.add(task)
                        task.add_done_callback(finished)
                if in_flight:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(changed.wait(), POLL_S)
                    continue
                if self._may_claim() and not self.stopping:
                    continue  # the last batch was all cache hits: more may be pending
                await self.writer.flush()
                if self.stopping or not await db(self._others_working)():
                    break
                await asyncio.sleep(POLL_S)
            if self.failure is not None or self.writer.failure is not None:
                raise self.failure or self.writer.failure  # the writer's: the database's
        finally:
            for task in list(in_flight):
                task.cancel()
            await asyncio.gather(*in_flight, return_exceptions=True)
            await self.writer.close()

    def _may_claim(self) -> bool:
        """Not while the last claim found nothing more, for a poll (nothing pending)."""
        return time.monotonic() - self._exhausted_at >= POLL_S

    async def _claim_calls(self, limit: int, client: httpx.AsyncClient) -> list[asyncio.Task]:
        claimed = await db(self._claim)(limit)
        if len(claimed) < limit:
            self._exhausted_at = time.monotonic()
        tasks = []
        for claim in claimed:
            if claim.hit is not None:
                provider, row = self._provider(claim.call), self.rows.get(claim.call.model)
                self.writer.add(outcomes.cached(claim.call, claim.hit, provider, row))
            else:
                tasks.append(asyncio.create_task(self._answer(claim, client)))
        return tasks

    async def _check_stop(self) -> None:
        """Every poll: has the run stopped (cancelled, aborted, failed) or has another
        shard seen a model refuse its calls? Or is this process stopping?"""
        if self.halt():
            self.stopping = True
        now = time.monotonic()
        if self.stopping or now - self._checked_at < POLL_S:
            return
        self._checked_at = now
        state = await db(
            Run.objects.filter(pk=self.run_id)
            .values("status", "cancel_requested", "stopped_models")
            .first
        )()
        if state is None or state["status"] not in Run.ACTIVE or state["cancel_requested"]:
            self.stopping = True
        else:
            self.stopped_models |= set(state["stopped_models"])

    # --- claims ----------------------------------------------------------------------------

    @transaction.atomic
    def _claim(self, limit: int) -> list[Claim]:
        """Claim up to `limit` pending calls; look up their cache hits, and reserve the
        worst case of the rest against the cap in one conditional UPDATE. When the batch
        does not fit under the cap, each call reserves for itself before it is made
        (:meth:`_reserve`), waiting for the calls in flight to settle."""
        self._reclaim()
        calls = self.calls.objects.filter(run_id=self.run_id)
        claims = [Claim(call, self._request(call)) for call in calls.claim(self.token, limit)]
        if claims and not self.options.no_cache and self.sealed is None:
            hashes = [c.call.request_hash for c in claims if self._provider(c.call).cacheable]
            hits = CachedResponse.objects.in_bulk(hashes, field_name="request_hash")
            for claim in claims:
                claim.hit = hits.get(claim.call.request_hash)
        to_call = [claim for claim in claims if claim.hit is None]
        for claim in to_call:
            claim.worst = self._worst_case(claim)
        reserved = {claim.call.pk: claim.worst.cost_usd for claim in to_call}
        if to_call and self.run_row.reserve(sum(reserved.values(), Decimal(0))):
            calls.note_reserved(reserved)
            for claim in to_call:
                claim.reserved = claim.worst.cost_usd
        return claims

    def _request(self, call: Call) -> Request:
        """The call's request: from its row, or a no-look run's from this process's memory."""
        return self.sealed.request(call) if self.sealed else Request(**call.request)

    def _worst_case(self, claim: Claim) -> WorstCase:
        provider, request = self._provider(claim.call), claim.request
        return worst_case(
            provider.prepare(request),
            self.rows.get(claim.call.model),
            output_tokens=provider.output_token_limit(request),
        )

    def _reclaim(self, *, now: bool = False) -> None:
        """Claims of dead shards back to pending: looked for a few times a lease, or `now`."""
        lease = settings.EVALSITE_CLAIM_LEASE_S
        if not now and time.monotonic() - self._reclaimed_at < min(lease / 10, 5.0):
            return
        self._reclaimed_at = time.monotonic()
        calls = self.calls.objects.filter(run_id=self.run_id)
        calls.reclaim_expired(self.run_row, lease, judge=self.judging)

    def _others_working(self) -> bool:
        self._reclaim(now=True)
        return self.calls.objects.filter(run_id=self.run_id).unfinished().exists()

    # --- one call ----------------------------------------------------------------------------

    async def _answer(self, claim: Claim, client: httpx.AsyncClient) -> None:
        call, worst = claim.call, claim.worst
        if call.model in self.stopped_models:
            why = self.stop_reasons.get(call.model, "")
            return self.writer.add(outcomes.skipped(call, claim.reserved or Decimal(0), why))
        async with self.gates[call.model]:
            reply = await self._call(claim, client)
        # the slot is free again before the outcome is built and handed to the writer
        if isinstance(reply, Outcome):
            return self.writer.add(reply)
        completion, latency = reply
        outcome = outcomes.done(
            call,
            self._provider(call),
            completion,
            latency_ms=latency,
            worst=worst,
            row=self.rows.get(call.model),
            secrets=self.secrets,
            sealed=self.sealed,
        )
        if outcome.overrun:
            self.stopping = True  # nothing more starts here; the writer aborts the run
        self.writer.add(outcome)

    async def _call(self, claim: Claim, client) -> Outcome | tuple[Completion, int]:
        """The call with its retries, once it has its reservation: its completion and
        latency, or the outcome without one. A model's first call goes alone: if it is
        refused (401, 400), no other call to that model has started."""
        call = claim.call
        if claim.reserved is None and not self.stopping and await self._reserve(call, claim.worst):
            claim.reserved = claim.worst.cost_usd
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
            return outcomes.skipped(
                call, claim.worst.cost_usd, self.stop_reasons.get(call.model, "")
            )
        if self.stopping:
            return outcomes.given_back(call)
        return await self._attempts(claim, client)

    async def _attempts(self, claim: Claim, client) -> Outcome | tuple[Completion, int]:
        call, provider = claim.call, self._provider(claim.call)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if await self._taken_over(claim):
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
                    call, error, claim.worst.cost_usd, sealed=sealed, stops=stops
                )
            latency = completion.simulated_latency_ms or int((time.monotonic() - started) * 1000)
            return completion, latency

    def _stop(self, model: str, error: ProviderError) -> tuple[str, ...]:
        """The models `error` stops, noted here so no call to them starts: `model`, and for
        a refused key every model of its provider (``openai/…``, an endpoint's name)."""
        provider = model.partition("/")[0]
        siblings = [m for m in self.gates if m.partition("/")[0] == provider]
        stops = tuple(sorted(siblings)) if error.stops_provider else (model,)
        why = f"{error.kind.value} on a call to {model}"
        for stopped in stops:
            self.stop_reasons.setdefault(stopped, why)
        self.stopped_models.update(stops)
        return stops

    async def _taken_over(self, claim: Claim) -> bool:
        """Whether another shard has taken this claim over: asked only of a claim that has
        waited here for half a lease (its host cut off, long backoffs), so a call sent
        promptly costs no round trip. Such a shard would otherwise send, and pay for, calls
        whose rows another shard is answering."""
        if time.monotonic() - claim.at < settings.EVALSITE_CLAIM_LEASE_S / 2:
            return False
        rows = type(claim.call).objects.filter(pk=claim.call.pk, claimed_by=self.token)
        return not await db(rows.filter(status=Call.Status.CLAIMED).exists)()

    @transaction.atomic
    def _reserve_for(self, call: Call, amount: Decimal) -> bool:
        """Reserve on the run and note it on the claimed call, so a reclaim can return it."""
        if not self.run_row.reserve(amount):
            return False
        self.calls.objects.filter(pk=call.pk).note_reserved({call.pk: amount})
        return True

    async def _reserve(self, call: Call, worst: WorstCase) -> bool:
        """Reserve the worst case; while other calls hold reservations, wait for them. False
        when the run has stopped meanwhile (another call overran, or it was cancelled)."""
        deadline = time.monotonic() + RESERVE_WAIT_S
        while not self.stopping:
            if await db(self._reserve_for)(call, worst.cost_usd):
                return True
            await self.writer.flush()  # this shard's finished calls release their part
            state = await db(
                Run.objects.filter(pk=self.run_id).values("status", "reserved_usd").get
            )()
            if state["status"] not in Run.ACTIVE:
                self.stopping = True
                return False
            if state["reserved_usd"] <= 0 or time.monotonic() > deadline:
                self.stopping = True
                await db(phases.abort_over_budget)(self.run_id, worst, call.model)
                return False
            await asyncio.sleep(POLL_S / 2)
        return False

    # --- between the phases: the moves themselves are in runs.engine.phases ---

    async def _join_judging(self) -> str | None:
        """JUDGING once the shard that moved the run there has queued the judge calls, so
        every shard judges with its share of the concurrency; None when the run goes
        nowhere this shard is needed (no judge calls, stopped, or waited a lease)."""
        deadline = time.monotonic() + settings.EVALSITE_CLAIM_LEASE_S
        while time.monotonic() < deadline:
            state = await db(phases.judging_state)(self.run_id)
            if state != phases.PREPARING:
                return state
            await asyncio.sleep(POLL_S / 2)
        return None

    def _close_stopped(self) -> None:
        self._reclaim(now=True)
        phases.close_stopped(self.run_id, self.calls)
