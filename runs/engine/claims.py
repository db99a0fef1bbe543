"""What one shard holds on a run: the calls it claimed and what they reserve against the cap.

A shard claims pending calls in batches under its token: one conditional UPDATE, so shards
never share a row; in the same transaction the batch's cache hits are looked up and the
worst case of the rest reserved against the run's cap. A call whose batch did not fit
reserves for itself before it is made, waiting while other calls hold reservations. Claims
of dead shards go back to pending when their lease runs out (:meth:`Claims.reclaim`), and a
claim that has waited here half a lease is checked before it is sent
(:meth:`Claims.taken_over`). The shard's writer (:mod:`runs.engine.writer`) finishes its
calls and gives back what it still holds through the same object.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction

from evalsite.core.plan import WorstCase, worst_case
from evalsite.core.pricing import PriceRow
from evalsite.core.providers import Provider
from evalsite.core.providers.base import Request
from runs.engine import phases
from runs.models import Answer, CachedResponse, Call, Judgement, Run
from runs.sealed import Sealed

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

    def worst_case(self) -> WorstCase:
        """The worst case of a claim that is to be called (set as it was claimed; a cache
        hit has none): LookupError for a cache hit."""
        if self.worst is None:
            raise LookupError(f"call {self.call.pk} was claimed as a cache hit: no worst case")
        return self.worst


class Claims:
    """One shard's claims on a run: the answers, then the judge calls (:attr:`calls`).

    The shard sets :attr:`run_row` as it reads the run, and :meth:`use` once it can call."""

    def __init__(self, run_id: str, *, sealed: Sealed | None) -> None:
        self.run_id = run_id
        self.token = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.provider_for: Callable[[Call], Provider]
        self.sealed = sealed  # a no-look run's case data: its requests, never cached
        self.calls: type[Call] = Answer
        self.run_row: Run
        self.rows: Mapping[str, PriceRow] = {}
        self.cache = True
        self._reclaimed_at = 0.0
        self._exhausted_at = -POLL_S

    def use(
        self, provider_for: Callable[[Call], Provider], rows: Mapping[str, PriceRow], *, cache: bool
    ) -> None:
        """The provider each call is made with, the run's prices (its worst cases), and
        whether cache hits are looked up."""
        self.provider_for, self.rows, self.cache = provider_for, rows, cache

    @property
    def judging(self) -> bool:
        return self.calls is Judgement

    def turn_to_judge_calls(self) -> None:
        """From the answers to the judge calls. That the last claim of answers found none
        left says nothing of the judge calls just queued: the first claim of them is not
        held back a poll (a judged run waited up to 0.25 s between its phases)."""
        self.calls = Judgement
        self._exhausted_at = -POLL_S

    def of_run(self):
        """The run's calls of the current kind (answers, or judge calls)."""
        return self.calls.objects.filter(run_id=self.run_id)

    def may_claim(self) -> bool:
        """Not while the last claim found nothing more, for a poll (nothing pending)."""
        return time.monotonic() - self._exhausted_at >= POLL_S

    def claim(self, limit: int) -> list[Claim]:
        """Claim up to `limit` pending calls (:meth:`_claim`), noting when fewer were left."""
        claims = self._claim(limit)
        if len(claims) < limit:
            self._exhausted_at = time.monotonic()
        return claims

    @transaction.atomic
    def _claim(self, limit: int) -> list[Claim]:
        """Claim up to `limit` pending calls; look up their cache hits, and reserve the
        worst case of the rest against the cap in one conditional UPDATE. When the batch
        does not fit under the cap, each call reserves for itself before it is made
        (:meth:`reserve`), waiting for the calls in flight to settle."""
        self.reclaim()
        calls = self.of_run()
        claims = [Claim(call, self.request(call)) for call in calls.claim(self.token, limit)]
        if claims and self.cache and self.sealed is None:
            cacheable = [c.call for c in claims if self.provider_for(c.call).cacheable]
            hashes = [call.request_hash for call in cacheable]
            hits = CachedResponse.objects.in_bulk(hashes, field_name="request_hash")
            for claim in claims:
                claim.hit = hits.get(claim.call.request_hash)
        to_call = [claim for claim in claims if claim.hit is None]
        reserved = {}
        for claim in to_call:
            claim.worst = worst = self._worst_case(claim)
            reserved[claim.call.pk] = worst.cost_usd
        if to_call and self.run_row.reserve(sum(reserved.values(), Decimal(0))):
            calls.note_reserved(reserved)
            for claim in to_call:
                claim.reserved = reserved[claim.call.pk]
        return claims

    def request(self, call: Call) -> Request:
        """The call's request: from its row, or a no-look run's from this process's memory."""
        return self.sealed.request(call) if self.sealed else Request(**call.request)

    def _worst_case(self, claim: Claim) -> WorstCase:
        provider, request = self.provider_for(claim.call), claim.request
        return worst_case(
            provider.prepare(request),
            self.rows.get(claim.call.model),
            output_tokens=provider.output_token_limit(request),
        )

    @transaction.atomic
    def reserve_for(self, call: Call, amount: Decimal) -> bool | None:
        """Reserve on the run and note it on the claimed call, so a reclaim can return it;
        None, reserving nothing, once the claim is no longer this one (taken over while the
        call waited: :meth:`CallQuerySet.claimed_as`). The row first, then the run's, in
        the order a claim and the writer lock them."""
        mine = self.calls.objects.claimed_as(self.token, call)
        if not mine.select_for_update().exists():
            return None
        if not self.run_row.reserve(amount):
            return False
        mine.update(reserved_usd=amount)
        return True

    async def reserve(
        self,
        call: Call,
        worst: WorstCase,
        *,
        db: Callable,
        stopping: Callable[[], bool],
        stop: Callable[[], None],
        flush: Callable[[], Awaitable[None]],
    ) -> bool:
        """Reserve the worst case; while other calls hold reservations, wait for them
        (`flush` writes the shard's finished calls, which release their part). False, the
        shard told to `stop`, when the run has stopped meanwhile (another call overran, or
        it was cancelled) or the call can never fit (the run is then aborted over budget);
        False too once the shard is `stopping`, or the claim was taken over."""
        deadline = time.monotonic() + RESERVE_WAIT_S
        while not stopping():
            reserved = await db(self.reserve_for)(call, worst.cost_usd)
            if reserved is not False:
                return bool(reserved)
            await flush()
            state = await db(
                Run.objects.filter(pk=self.run_id).values("status", "reserved_usd").get
            )()
            if state["status"] not in Run.ACTIVE:
                stop()
                return False
            if state["reserved_usd"] <= 0:
                # Nothing else holds a reservation, perhaps only since the flush released
                # the last one: one more try decides whether the call can fit at all.
                reserved = await db(self.reserve_for)(call, worst.cost_usd)
                if reserved is not False:
                    return bool(reserved)
                never_fits = await db(self.nothing_reserved)()
            else:
                never_fits = False
            if never_fits or time.monotonic() > deadline:
                stop()
                await db(phases.abort_over_budget)(self.run_id, worst, call.model)
                return False
            await asyncio.sleep(POLL_S / 2)
        return False

    def nothing_reserved(self) -> bool:
        """Whether no call of the run holds a reservation (another shard's may have come)."""
        return not Run.objects.filter(pk=self.run_id, reserved_usd__gt=0).exists()

    def reclaim(self, *, now: bool = False) -> None:
        """Claims of dead shards back to pending: looked for a few times a lease as this
        shard claims, sparing its own claims, which are alive however old (a call slower
        than the lease would otherwise be given back and claimed again by its own shard, and
        its answer refused, for ever); or `now`, once it has no call in flight, its own too
        (none should be left then)."""
        lease = settings.EVALSITE_CLAIM_LEASE_S
        if not now and time.monotonic() - self._reclaimed_at < min(lease / 10, 5.0):
            return
        self._reclaimed_at = time.monotonic()
        sparing = "" if now else self.token
        self.of_run().reclaim_expired(self.run_row, lease, judge=self.judging, sparing=sparing)

    def others_working(self) -> bool:
        """Whether any call of the current kind is still pending or claimed (by any shard)."""
        self.reclaim(now=True)
        return self.of_run().unfinished().exists()

    async def taken_over(self, claim: Claim, *, db: Callable) -> bool:
        """Whether another shard has taken this claim over: asked only of a claim that has
        waited here for half a lease (its host cut off, long backoffs), so a call sent
        promptly costs no round trip. Such a shard would otherwise send, and pay for, calls
        whose rows another shard is answering."""
        if time.monotonic() - claim.at < settings.EVALSITE_CLAIM_LEASE_S / 2:
            return False
        mine = type(claim.call).objects.claimed_as(self.token, claim.call)
        return not await db(mine.exists)()

    def give_back(self, calls: list[Call] | None = None) -> None:
        """The claims of `calls` (all this shard still holds: None) back to pending, with
        their reservations."""
        if calls is None:
            self.of_run().give_back(self.run_row, self.token, judge=self.judging)
            return
        attempts = {call.pk: call.attempts for call in calls}
        mine = self.of_run().filter(pk__in=attempts)
        mine.give_back(self.run_row, self.token, judge=self.judging, attempts=attempts)

    def finish(self, changes: dict[int, dict[str, Any]], calls: list[Call]) -> set[int]:
        """Write each call's result while this shard still holds the claim it was made
        under (`calls`, as claimed); the ids written."""
        attempts = {call.pk: call.attempts for call in calls}
        return self.of_run().finish_claimed(self.token, changes, attempts)
