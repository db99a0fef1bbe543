"""Executing a run: claim pending calls, call the providers concurrently, store each one.

A run has phases. *Running*: every answer (task, case, contestant, repeat) is a pending
row. *Judging*: the answers are scored, pairs formed, and every judge call (two orders per
included pair, one grade per graded answer) is a pending row too. *Reporting*: the pairs
are combined and the report is written. Answers and judge calls go through the same engine:
the cache, the reservation against the cap, retries, claims and shards.

One *shard* is one call of :func:`execute`: it claims pending calls in small batches
(conditional UPDATE, so shards never share a row), calls the providers with asyncio under
per-model limits, and finishes every call in one short transaction together with its
spend. Shards keep going until nothing is pending; the one that wins the move to the next
phase does it. A shard that dies leaves claimed rows, which go back to pending when their
lease expires, and any live shard (or a resumed one) picks them up; every phase step is
idempotent. Provider keys come from this process's environment, never from the queue.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import random
import time
import uuid
from decimal import Decimal
from functools import partial

import httpx
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, close_old_connections, connections, transaction
from django.db.models import Exists, F
from django.utils import timezone

from evalsite.core.keys import held_secrets, without_secrets
from evalsite.core.pacing import MAX_ATTEMPTS, Limits, ModelGate, backoff_delay
from evalsite.core.plan import WorstCase, call_hash, worst_case
from evalsite.core.pricing import PriceRow, Usage, call_cost, to_nano
from evalsite.core.providers import (
    Completion,
    ErrorKind,
    Provider,
    ProviderError,
    RepliesFileError,
    ScriptedReplies,
    build_provider,
    make_client,
)
from evalsite.core.providers.base import Request
from runs.judging import finish_judging, prepare_judging, read_judgement
from runs.models import Answer, CachedResponse, Call, Endpoint, Judgement, Run
from runs.planner import endpoint_configs
from runs.reporting import write_partial_report, write_report

db = partial(sync_to_async, thread_sensitive=True)
log = logging.getLogger(__name__)
STOPPING_KINDS = (ErrorKind.AUTH.value, ErrorKind.BAD_REQUEST.value)
POLL_S = 0.25
RESERVE_WAIT_S = 300.0


def execute(
    run_id: str,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    shards: int = 1,
) -> Run:
    """Run one shard of `run_id` to the end of the run's pending work; return the run."""
    shard = Shard(run_id, transport=transport, shards=shards)
    try:
        asyncio.run(shard.run())
    finally:
        close_old_connections()
    return Run.objects.get(pk=run_id)


class Shard:
    def __init__(self, run_id: str, *, transport=None, shards: int = 1):
        self.run_id = run_id
        self.token = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.transport = transport
        self.shards = max(1, shards)
        self.stopping = False
        self.aborted = False
        self.stopped_models: set[str] = set()
        self.rng = random.Random()
        self._checked_at = 0.0
        self.calls: type[Call] = Answer
        self.judge: Provider | None = None

    # --- the loop --------------------------------------------------------------------------

    async def run(self) -> None:
        """The run's phases; an exception in one fails the run with its reason (a run is
        never handed out again and again for a fault that would only repeat)."""
        try:
            await self._phases()
        except (DatabaseError, OSError):
            raise  # the database or the disk: another shard or a retry may well succeed
        except Exception as error:
            log.exception("run %s failed", self.run_id)
            await db(self._fail)(error)
        finally:
            await db(connections.close_all)()

    def _fail(self, error: Exception) -> None:
        run = Run.objects.get(pk=self.run_id)
        phase = run.status if run.is_active else "its last step"
        reason = f"{type(error).__name__}: {error}"[:1000]
        run.finish(Run.Status.FAILED, f"failed while {phase}: {reason}")

    async def _phases(self) -> None:
        """Each phase step returns the phase this shard goes on with, or None to stop."""
        phase = await db(self._prepare)()
        if phase is not None and self.run_row.cancel_requested:
            phase = None  # asked to cancel while nobody worked on it: close it below
        if phase == Run.Status.RUNNING:
            await self._loop()
            phase = await db(self._finish_answers)()
        elif phase == Run.Status.JUDGING:
            # resuming a run that stopped while judging: complete its preparation
            # (idempotent), then the judge calls still pending
            await db(prepare_judging)(self.run_row, self.judge)
        if phase == Run.Status.JUDGING:
            self.calls = Judgement
            await self._loop()
            phase = await db(self._finish_judging)()
        if phase == Run.Status.REPORTING:
            await db(self._report)()
        await db(self._close_stopped)()

    def _prepare(self) -> str | None:
        self.run_row = Run.objects.select_related("price_table").get(pk=self.run_id)
        if not self.run_row.is_active:
            return None
        self.run_row.mark_running()
        options = self.run_row.options
        self.secrets = held_secrets(
            os.environ, Endpoint.objects.values_list("key_env_var", flat=True)
        )
        self.rows: dict[str, PriceRow] = {
            p.model: p.to_row() for p in self.run_row.price_table.prices.all()
        }
        try:
            self._build_providers(options)
        except (ProviderError, RepliesFileError) as error:
            # This process cannot make the calls (e.g. a worker without the key): end the
            # run with the reason rather than leave it running with nobody to finish it.
            self.run_row.finish(Run.Status.FAILED, f"this worker cannot run it: {error}")
            return None
        return self.run_row.status

    def _build_providers(self, options: dict) -> None:
        replies = ScriptedReplies.load(options["replies"]) if options.get("replies") else None
        endpoints = endpoint_configs()
        self.providers: dict[str, Provider] = {}
        self.gates: dict[str, ModelGate] = {}
        self.first_calls: dict[str, asyncio.Event] = {}
        limits = Limits(int(options.get("concurrency") or settings.EVALSITE_MAX_CONCURRENCY))
        build = partial(
            build_provider,
            env=os.environ,
            endpoints=endpoints,
            replies=replies,
            fake=options["fake"],
        )
        for contestant in self.run_row.contestants:
            model = contestant.partition("@")[0]
            self.providers[contestant] = build(model)
            self.gates.setdefault(model, ModelGate(limits.share(self.shards)))
        judge_model = self.run_row.judge.get("model")
        if judge_model:
            self.judge = build(judge_model)
            self.gates.setdefault(judge_model, ModelGate(limits.share(self.shards)))
        self.concurrency = sum(gate.limits.max_concurrency for gate in self.gates.values())

    def _provider(self, call: Call) -> Provider:
        return self.judge if call.is_judge_call else self.providers[call.contestant]

    async def _loop(self) -> None:
        in_flight: set[asyncio.Task] = set()
        async with make_client(
            transport=self.transport, max_connections=self.concurrency
        ) as client:
            while True:
                await self._check_stop()
                if not self.stopping and len(in_flight) < self.concurrency:
                    batch = await db(self._claim)(2 * self.concurrency - len(in_flight))
                    in_flight |= {asyncio.create_task(self._answer(a, client)) for a in batch}
                if in_flight:
                    _, in_flight = await asyncio.wait(
                        in_flight, timeout=POLL_S, return_when=asyncio.FIRST_COMPLETED
                    )
                elif self.stopping or not await db(self._others_working)():
                    break
                else:
                    await asyncio.sleep(POLL_S)

    async def _check_stop(self) -> None:
        now = time.monotonic()
        if self.stopping or now - self._checked_at < POLL_S:
            return
        self._checked_at = now
        active = await db(
            Run.objects.filter(pk=self.run_id, status__in=Run.ACTIVE, cancel_requested=False).exists
        )()
        if not active:
            self.stopping = True

    # --- claims ----------------------------------------------------------------------------

    def _claim(self, limit: int) -> list[Answer]:
        if limit <= 0:
            return []
        self._reclaim_expired()
        calls = self.calls.objects.filter(run_id=self.run_id)
        ids = list(calls.pending().values_list("pk", flat=True)[:limit])
        if not ids:
            return []
        active = Run.objects.filter(pk=self.run_id, status__in=Run.ACTIVE)
        calls.filter(Exists(active), pk__in=ids, status=Call.Status.PENDING).update(
            status=Call.Status.CLAIMED,
            claimed_by=self.token,
            claimed_at=timezone.now(),
            attempts=F("attempts") + 1,
        )
        stopped = calls.filter(error_kind__in=STOPPING_KINDS)
        self.stopped_models |= {call.model for call in stopped.only(*_MODEL_FIELDS[self.calls])}
        return list(calls.filter(pk__in=ids, claimed_by=self.token, status=Call.Status.CLAIMED))

    def _reclaim_expired(self) -> None:
        """Claims of dead shards back to pending, with the reservations they held."""
        expired = timezone.now() - dt.timedelta(seconds=settings.EVALSITE_CLAIM_LEASE_S)
        rows = self.calls.objects.filter(
            run_id=self.run_id, status=Call.Status.CLAIMED, claimed_at__lt=expired
        ).values_list("pk", "claimed_by", "reserved_usd")
        for pk, token, reserved in rows:
            self._unclaim(pk, token, reserved)

    @transaction.atomic
    def _unclaim(self, pk: int, token: str, reserved: Decimal) -> bool:
        changed = self.calls.objects.filter(
            pk=pk, claimed_by=token, status=Call.Status.CLAIMED
        ).update(status=Call.Status.PENDING, claimed_by="", reserved_usd=0)
        if changed and reserved:
            self.run_row.settle(reserved, None, None, judge=self.calls is Judgement)
        return changed == 1

    def _release(self, call: Call) -> None:
        self._unclaim(call.pk, self.token, Decimal(0))

    def _give_back(self, call: Call, reserved: Decimal) -> None:
        """A call abandoned because the run stopped: it is pending again."""
        self._unclaim(call.pk, self.token, reserved)

    def _others_working(self) -> bool:
        self._reclaim_expired()
        return self.calls.objects.filter(run_id=self.run_id).unfinished().exists()

    # --- one call ----------------------------------------------------------------------------

    async def _answer(self, answer: Call, client: httpx.AsyncClient) -> None:
        provider = self._provider(answer)
        request = Request(**answer.request)
        if request.model in self.stopped_models:
            return await db(self._finish_skipped)(answer)
        if provider.cacheable and not self.run_row.options.get("no_cache"):
            hit = await db(CachedResponse.objects.filter(request_hash=answer.request_hash).first)()
            if hit is not None:
                return await db(self._finish_cached)(answer, hit)
        async with self.gates[request.model]:
            if self.stopping:
                return await db(self._release)(answer)
            worst = worst_case(
                provider.prepare(request),
                self.rows.get(request.model),
                output_tokens=provider.output_token_limit(request),
            )
            if not await self._reserve(answer, worst, request.model):
                return await db(self._release)(answer)
            if self.stopping:
                return await db(self._give_back)(answer, worst.cost_usd)
            await self._call(answer, provider, request, client, worst)

    async def _call(self, answer, provider, request, client, worst: WorstCase) -> None:
        """The call with its retries. A model's first call goes alone: if it is refused
        (401, 400), no other call to that model has started."""
        first = self.first_calls.get(request.model)
        if first is None:
            self.first_calls[request.model] = first = asyncio.Event()
            try:
                return await self._attempts(answer, provider, request, client, worst)
            finally:
                first.set()
        if not first.is_set():
            await first.wait()
            # It waited for that first call: has the run stopped meanwhile (an overrun in
            # any shard, a cancel)? Then it is given back unsent.
            self._checked_at = 0.0
            await self._check_stop()
        if request.model in self.stopped_models:
            return await db(self._finish_skipped)(answer, worst.cost_usd)
        if self.stopping:
            return await db(self._give_back)(answer, worst.cost_usd)
        return await self._attempts(answer, provider, request, client, worst)

    async def _attempts(self, answer, provider, request, client, worst: WorstCase) -> None:
        reserved = worst.cost_usd
        for attempt in range(1, MAX_ATTEMPTS + 1):
            started = time.monotonic()
            try:
                completion = await provider.complete(request, client)
            except ProviderError as error:
                if error.retryable and attempt < MAX_ATTEMPTS and not self.stopping:
                    await asyncio.sleep(backoff_delay(attempt, error.retry_after, rng=self.rng))
                    self._checked_at = 0.0
                    await self._check_stop()
                    if not self.stopping:
                        continue
                    return await db(self._give_back)(answer, reserved)
                if error.stops_model:
                    self.stopped_models.add(request.model)
                return await db(self._finish_error)(answer, error, reserved)
            latency = completion.simulated_latency_ms or int((time.monotonic() - started) * 1000)
            return await db(self._finish_done)(answer, provider, completion, latency, worst)

    @transaction.atomic
    def _reserve_for(self, answer: Answer, amount: Decimal) -> bool:
        """Reserve on the run and note it on the claimed answer, so a reclaim can return it."""
        if not self.run_row.reserve(amount):
            return False
        self.calls.objects.filter(pk=answer.pk).update(reserved_usd=amount)
        return True

    async def _reserve(self, answer: Answer, worst: WorstCase, model: str) -> bool:
        """Reserve the worst case; while other calls hold reservations, wait for them. False
        when the run has stopped meanwhile (another call overran, or it was cancelled)."""
        deadline = time.monotonic() + RESERVE_WAIT_S
        while not self.stopping:
            if await db(self._reserve_for)(answer, worst.cost_usd):
                return True
            state = await db(
                Run.objects.filter(pk=self.run_id).values("status", "reserved_usd").get
            )()
            if state["status"] not in Run.ACTIVE:
                self.stopping = True
                return False
            if state["reserved_usd"] <= 0 or time.monotonic() > deadline:
                await db(self._abort_over_budget)(worst, model)
                return False
            await asyncio.sleep(POLL_S / 2)
        return False

    def _abort_over_budget(self, worst: WorstCase, model: str) -> None:
        self.aborted = self.stopping = True
        run = Run.objects.get(pk=self.run_id)
        amount, cap = worst.cost_usd, run.cap_usd
        if amount > cap:
            detail = (
                f"stopped: a call to {model} may cost up to ${amount:.6f} "
                f"({worst.input_tokens} input and {worst.output_tokens} output tokens at "
                f"most), more than the whole cap ${cap:.4f}; finished answers are kept"
            )
        else:
            detail = (
                f"stopped: the next call (up to ${amount:.6f}) no longer fit under the cap "
                f"${cap:.4f} (spent ${run.spent_usd:.6f}); finished answers are kept"
            )
        run.finish(Run.Status.ABORTED_OVER_BUDGET, detail)

    def _stop_overrun(self, model: str, usage: Usage, cost: Decimal, worst: WorstCase) -> None:
        """A call settled above its reservation: stop the run in the same transaction, so
        no shard reserves or claims anything after it; the calls in flight settle."""
        self.aborted = self.stopping = True
        if usage.output_tokens > worst.output_tokens:
            what = (
                f"{usage.output_tokens} output tokens, more than the "
                f"{worst.output_tokens} it was allowed"
            )
        else:
            reported = usage.input_tokens + usage.cached_input_tokens
            what = f"{reported} input tokens, more than the {worst.input_tokens} it could send"
        self.run_row.finish(
            Run.Status.ABORTED_OVER_BUDGET,
            f"stopped: a call to {model} reported {what}; it cost ${cost:.6f} against the "
            f"${worst.cost_usd:.6f} reserved. No call is reserved after it; the calls already "
            "in flight are kept and paid for, as are the finished answers",
        )

    # --- recording results: one short transaction each ------------------------------------

    def _costs(self, model: str, usage: Usage | None) -> tuple[Decimal | None, bool]:
        row = self.rows.get(model)
        if row is None:
            return None, False  # not priced (scripted/command without a row)
        cost = call_cost(row, usage)
        return cost, cost is None

    @transaction.atomic
    def _finish_done(self, answer, provider, completion: Completion, latency, worst) -> None:
        cost, incomplete = self._costs(answer.model, completion.usage)
        usage = completion.usage
        fields = _usage_fields(usage) | {
            # an answer echoing a key this process holds is stored without it
            "text": without_secrets(completion.text, self.secrets),
            "finish_reason": completion.finish_reason or "",
            "schema_mode": completion.schema_mode or "",
            "latency_ms": latency,
        }
        if provider.cacheable:
            CachedResponse.objects.get_or_create(
                request_hash=answer.request_hash,
                defaults=fields
                | {
                    "provider": provider.name,
                    "model": answer.model,
                    "task_id": answer.task_id,
                    "provider_model": completion.provider_model or "",
                },
            )
        fields |= {"cost_usd": cost, "cost_if_uncached_usd": cost}
        fields |= _earlier_attempt(answer, cost, fields)
        kept = self._store(answer, Call.Status.DONE, fields | self._read(answer, fields["text"]))
        # A lost claim's reservation was returned by whoever reclaimed it; the spend stands,
        # as reported even above the reservation: what was billed was billed.
        self.run_row.settle(
            worst.cost_usd if kept else Decimal(0), cost, cost, judge=answer.is_judge_call
        )
        if incomplete:
            Run.objects.filter(pk=self.run_id).update(cost_incomplete=True)
        if cost is not None and to_nano(cost) > to_nano(worst.cost_usd):
            self._stop_overrun(answer.model, usage, cost, worst)

    @transaction.atomic
    def _finish_cached(self, answer: Answer, hit: CachedResponse) -> None:
        usage = (
            None
            if hit.input_tokens is None
            else Usage(hit.input_tokens, hit.output_tokens or 0, hit.cached_input_tokens or 0)
        )
        cost, _ = self._costs(answer.model, usage)
        fields = _usage_fields(usage) | {
            "text": hit.text,
            "finish_reason": hit.finish_reason,
            "schema_mode": hit.schema_mode,
            "latency_ms": hit.latency_ms,
            "cached": True,
            "cost_usd": Decimal(0) if cost is not None else None,
            "cost_if_uncached_usd": cost,
        }
        if self._store(
            answer, Call.Status.DONE, fields | self._read(answer, hit.text, cached=True)
        ):
            self.run_row.settle(Decimal(0), None, cost, judge=answer.is_judge_call)

    def _read(self, call: Call, text: str, *, cached: bool = False) -> dict:
        """A judge reply read into its fields; an unreadable first reply sends the call back
        to pending as its one retry: a new request (the reply and a reminder appended), so
        the cached unreadable reply can never come back, while an identical later run still
        finds the retry's own reply in the cache."""
        if not call.is_judge_call:
            return {}
        fields = read_judgement(call, text)
        if fields.get("status") == Call.Status.PENDING:
            fields["request_hash"] = call_hash(Request(**fields["request"]), self._provider(call))
            fields["first_cached"] = cached
        return fields

    @transaction.atomic
    def _finish_error(self, answer: Call, error: ProviderError, reserved: Decimal) -> None:
        kept = self._store(
            answer,
            Call.Status.ERROR,
            {"error_kind": error.kind.value, "error_message": str(error.message)[:2000]},
        )
        if kept:
            self.run_row.settle(reserved, None, None, judge=answer.is_judge_call)

    @transaction.atomic
    def _finish_skipped(self, answer: Call, reserved: Decimal = Decimal(0)) -> None:
        message = (
            f"not called: {answer.model} refused an earlier call of this run (auth or bad request)"
        )
        kept = self._store(
            answer, Call.Status.ERROR, {"error_kind": "skipped", "error_message": message}
        )
        if reserved and kept:
            self.run_row.settle(reserved, None, None, judge=answer.is_judge_call)

    def _store(self, answer: Call, status: str, fields: dict) -> bool:
        """Finish a claimed call; False if this shard lost the claim (lease expired).
        ``fields`` may set the status itself (a judge call going back for its retry)."""
        values = {"status": status, "finished_at": timezone.now()} | fields
        return (
            self.calls.objects.filter(
                pk=answer.pk, claimed_by=self.token, status=Call.Status.CLAIMED
            ).update(claimed_by="", reserved_usd=0, **values)
            == 1
        )

    # --- the end -----------------------------------------------------------------------------

    def _phase_over(self) -> Run | None:
        """The run, when this phase's calls are all finished and the run goes on; None
        when it was cancelled, stopped, or another shard is still working."""
        run = Run.objects.get(pk=self.run_id)
        if not run.is_active or run.cancel_requested:
            return None
        if self.calls.objects.filter(run=run).unfinished().exists():
            return None
        return run

    def _finish_answers(self) -> str | None:
        """JUDGING for the shard that wins the move there (it prepares judging); None else."""
        run = self._phase_over()
        if run is None or run.status != Run.Status.RUNNING:
            return None
        answers = Answer.objects.filter(run=run)
        if not answers.filter(status=Call.Status.DONE).exists() and answers.exists():
            first = answers.filter(status=Call.Status.ERROR).first()
            run.finish(
                Run.Status.FAILED, f"every answer failed; first error: {first.error_message}"
            )
            return None
        if not run.advance(Run.Status.RUNNING, Run.Status.JUDGING):
            return None
        prepare_judging(run, self.judge)
        return Run.Status.JUDGING

    def _finish_judging(self) -> str | None:
        """REPORTING for the shard that wins the move there; None else."""
        run = self._phase_over()
        if run is None or run.status != Run.Status.JUDGING:
            return None
        return Run.Status.REPORTING if run.advance(run.status, Run.Status.REPORTING) else None

    def _close_stopped(self) -> None:
        """A run asked to cancel is closed once no shard holds a claim on it; a run that
        stopped (cancelled, aborted over budget) gets a partial report of what it kept."""
        run = Run.objects.get(pk=self.run_id)
        if run.is_active and run.cancel_requested:
            self._reclaim_expired()
            if self.calls.objects.filter(run=run, status=Call.Status.CLAIMED).exists():
                return  # another shard is finishing its calls in flight; it closes the run
            # the report first, so a cancelled run always has one
            write_partial_report(run, status=Run.Status.CANCELLED)
            run.finish(Run.Status.CANCELLED, "cancelled; finished answers are kept")
        elif run.status in Run.STOPPED and run.report is None:
            write_partial_report(run)

    def _report(self) -> None:
        run = Run.objects.get(pk=self.run_id)
        if run.status != Run.Status.REPORTING:
            return
        finish_judging(run)  # idempotent: a resumed run may have stopped half-way through
        write_report(run)
        run.finish(Run.Status.DONE)


def _earlier_attempt(call: Call, cost: Decimal | None, fields: dict) -> dict:
    """A judge call asked again keeps the first reply's cost and tokens on its row, added to
    the retry's, so the row accounts for both calls."""
    if not getattr(call, "retried", False):
        return {}
    summed = {}
    for name, now in (("cost_usd", cost), ("input_tokens", fields.get("input_tokens")),
                      ("output_tokens", fields.get("output_tokens"))):  # fmt: skip
        before = getattr(call, name)
        if before is not None and now is not None:
            summed[name] = before + now
    if "cost_usd" in summed:
        summed["cost_if_uncached_usd"] = summed["cost_usd"]
    return summed


_MODEL_FIELDS = {Answer: ("pk", "contestant"), Judgement: ("pk", "judge_model")}


def _usage_fields(usage: Usage | None) -> dict:
    if usage is None:
        return {"input_tokens": None, "output_tokens": None, "cached_input_tokens": None}
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
    }
