"""What a finished call writes: its row's new fields and what it does to the run's money.

The runner builds an :class:`Outcome` the moment a call ends (a reply, an error, a cache
hit, a skip, a call given back unsent); the shard's writer (:mod:`runs.engine.writer`) stores
many of them in one transaction. Building them is plain Python: nothing here touches the
database.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from evalsite.core.keys import without_secrets
from evalsite.core.no_look import sealed_error
from evalsite.core.plan import WorstCase, call_hash
from evalsite.core.pricing import MAX_USAGE_TOKENS, PriceRow, Usage, call_cost, to_nano
from evalsite.core.providers import Completion, ErrorKind, Provider, ProviderError
from evalsite.core.providers.base import Request
from runs.engine.judging import read_judgement
from runs.models import CachedResponse, Call, Judgement
from runs.sealed import Sealed


@dataclass
class Outcome:
    """One call's end. ``values`` is None for a call given back unsent (it goes back to
    pending with its reservation returned); otherwise the fields its row gets while the
    shard still holds its claim.

    ``reserved`` is released when the row is written. ``spent`` was billed by the
    provider, so it is recorded even when the claim was lost meanwhile (what was billed
    was billed); ``uncached`` (what it would have cost without the cache) only with the
    row. ``overrun`` is the abort detail of a call that cost more than was reserved for it.
    """

    call: Call
    values: dict | None
    reserved: Decimal = Decimal(0)
    spent: Decimal | None = None
    uncached: Decimal | None = None
    cache_row: dict[str, Any] | None = None  # a CachedResponse's fields (insert_each)
    incomplete: bool = False  # a priced call whose usage could not be costed
    overrun: str = ""
    # the models this call's error stops (its own; every model of a refused key's
    # provider): not called again this run
    stops_models: tuple[str, ...] = ()

    @property
    def urgent(self) -> bool:
        """Written at once: it stops the run or a model."""
        return bool(self.overrun or self.stops_models)


def given_back(call: Call) -> Outcome:
    return Outcome(call, None)


def done(
    call: Call,
    provider: Provider,
    completion: Completion,
    *,
    latency_ms: int,
    worst: WorstCase,
    row: PriceRow | None,
    secrets: tuple[str, ...],
    sealed: Sealed | None = None,
) -> Outcome:
    """A call answered. In a no-look run (`sealed`), the reply is kept in memory, never
    in the cache, and the row gets no text (:meth:`Sealed.keep`). A refusal is paid for
    and recorded as an error of kind ``refused`` (:func:`_refusal`)."""
    usage = completion.usage
    cost, incomplete = _cost(row, usage)
    if completion.refusal is not None:
        values = _usage_fields(usage) | _refusal(completion, latency_ms, secrets, sealed)
        values, cache_row = values | {"cost_usd": cost, "cost_if_uncached_usd": cost}, None
    else:
        values, cache_row = _answered(call, provider, completion, cost, latency_ms, secrets, sealed)
    return Outcome(
        call,
        values,
        reserved=worst.cost_usd,
        spent=cost,
        uncached=cost,
        cache_row=cache_row,
        incomplete=incomplete,
        overrun=_overrun(call, usage, cost, worst),
    )


def _answered(
    call: Call,
    provider: Provider,
    completion: Completion,
    cost: Decimal | None,
    latency_ms: int,
    secrets: tuple[str, ...],
    sealed: Sealed | None,
) -> tuple[dict, dict[str, Any] | None]:
    """An answer's row fields, and its cache entry unless it may not be cached."""
    values = _usage_fields(completion.usage) | {
        # an answer echoing a key this process holds is stored without it
        "text": without_secrets(completion.text, secrets),
        "finish_reason": completion.finish_reason or "",
        "schema_mode": completion.schema_mode or "",
        "latency_ms": latency_ms,
    }
    cache_row = None
    if provider.cacheable and sealed is None:
        cache_row = {
            "request_hash": call.request_hash,
            "provider": provider.name,
            "model": call.model,
            "task_id": call.task_id,
            "provider_model": completion.provider_model or "",
            **values,
        }
    values |= {"cost_usd": cost, "cost_if_uncached_usd": cost, "status": Call.Status.DONE}
    values |= _earlier_attempt(call, values)
    values |= _read(call, values["text"], provider, sealed=sealed)
    if sealed is not None:
        values = sealed.keep(call, values)
    return values, cache_row


def _refusal(
    completion: Completion, latency_ms: int, secrets: tuple[str, ...], sealed: Sealed | None
) -> dict:
    """A refusal's row: an error of kind ``refused`` with no text, never cached (a rerun
    asks again), its reason quoted unless the run is no-look (the model's words may
    quote the case: the finish reason only)."""
    message = without_secrets(completion.refusal or "", secrets)  # shown after its kind
    if sealed is not None:
        finish = completion.finish_reason or "none"
        message = f"finish reason {finish}; the refusal's words are not kept in a no-look run"
    return {
        "status": Call.Status.ERROR,
        "error_kind": ErrorKind.REFUSED.value,
        "error_message": message[:2000],
        "finish_reason": completion.finish_reason or "",
        "schema_mode": completion.schema_mode or "",
        "latency_ms": latency_ms,
    }


def _overrun(call: Call, usage: Usage | None, cost: Decimal | None, worst: WorstCase) -> str:
    """The abort detail of a call that cost more than was reserved for it, else ""."""
    if usage is None or cost is None or to_nano(cost) <= to_nano(worst.cost_usd):
        return ""
    return _overrun_detail(call.model, usage, cost, worst)


def cached(call: Call, hit: CachedResponse, provider: Provider, row: PriceRow | None) -> Outcome:
    usage = (
        None
        if hit.input_tokens is None
        else Usage(hit.input_tokens, hit.output_tokens or 0, hit.cached_input_tokens or 0)
    )
    cost, _ = _cost(row, usage)
    values = _usage_fields(usage) | {
        "status": Call.Status.DONE,
        "text": hit.text,
        "finish_reason": hit.finish_reason,
        "schema_mode": hit.schema_mode,
        "latency_ms": hit.latency_ms,
        "cached": True,
        "cost_usd": Decimal(0) if cost is not None else None,
        "cost_if_uncached_usd": cost,
    }
    values |= _earlier_attempt(call, values)
    values |= _read(call, hit.text, provider, cached=True)
    return Outcome(call, values, uncached=cost)


def failed(
    call: Call,
    error: ProviderError,
    reserved: Decimal,
    *,
    sealed: bool = False,
    stops: tuple[str, ...] = (),
) -> Outcome:
    """A call that failed, stopping the models in `stops`; a no-look run keeps the error's
    kind and HTTP status only."""
    message = sealed_error(error.kind.value, error.status) if sealed else str(error.message)
    values = {
        "status": Call.Status.ERROR,
        "error_kind": error.kind.value,
        "error_message": message[:2000],
    }
    return Outcome(call, values, reserved=reserved, stops_models=stops)


def skipped(call: Call, reserved: Decimal, why: str = "") -> Outcome:
    """A call not made: its model was stopped by an earlier call's error (`why`: its kind
    and whose call, when this shard saw it)."""
    why = why or f"a call to {call.model} was refused: auth, bad_request or unknown_model"
    message = f"not called: {call.model} was stopped earlier in this run ({why})"
    values = {"status": Call.Status.ERROR, "error_kind": "skipped", "error_message": message}
    return Outcome(call, values, reserved=reserved)


def _cost(row: PriceRow | None, usage: Usage | None) -> tuple[Decimal | None, bool]:
    if row is None:
        return None, False  # not priced (scripted/command without a row)
    cost = call_cost(row, usage)
    return cost, cost is None


def _read(
    call: Call, text: str, provider: Provider, *, cached: bool = False, sealed: Sealed | None = None
) -> dict:
    """A judge reply read into its fields; an unreadable first reply sends the call back
    to pending as its one retry: a new request (the reply and a reminder appended), so
    the cached unreadable reply can never come back, while an identical later run still
    finds the retry's own reply in the cache."""
    if not call.is_judge_call:
        return {}
    request = sealed.request(call).to_json() if sealed is not None else None
    fields = read_judgement(cast(Judgement, call), text, request)  # a judge call
    if fields.get("status") == Call.Status.PENDING:
        fields["request_hash"] = call_hash(Request(**fields["request"]), provider)
        fields["first_cached"] = cached
    return fields


def _earlier_attempt(call: Call, fields: dict) -> dict:
    """A judge call asked again keeps the first reply's cost, cost if uncached and tokens on
    its row, added to the retry's `fields`, so the row accounts for both calls: each reply
    made or served from the cache alike (a cached retry's row had its own cost if uncached
    alone, and an identical run's rows summed less than the first run's)."""
    if not getattr(call, "retried", False):
        return {}
    summed = {}
    for name in ("cost_usd", "cost_if_uncached_usd", "input_tokens", "output_tokens"):
        before, now = getattr(call, name), fields.get(name)
        if before is not None and now is not None:
            summed[name] = before + now
    return summed


def _overrun_detail(model: str, usage: Usage, cost: Decimal, worst: WorstCase) -> str:
    if usage.output_tokens > worst.output_tokens:
        what = (
            f"{_tokens(usage.output_tokens)} output tokens, more than the "
            f"{worst.output_tokens} it was allowed"
        )
    else:
        reported = _tokens(usage.input_tokens + usage.cached_input_tokens)
        what = f"{reported} input tokens, more than the {worst.input_tokens} it could send"
    return (
        f"stopped: a call to {model} reported {what}; it cost ${cost:.6f} against the "
        f"${worst.cost_usd:.6f} reserved. No call is reserved after it; the calls already "
        "in flight are kept and paid for, as are the finished answers"
    )


def _tokens(count: int) -> str:
    """A reported count; one at the bound may stand for any larger (10^30, 1e308)."""
    return f"{count} or more" if count >= MAX_USAGE_TOKENS else str(count)


def _usage_fields(usage: Usage | None) -> dict:
    if usage is None:
        return {"input_tokens": None, "output_tokens": None, "cached_input_tokens": None}
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
    }
