"""A shard cut off from the others for longer than the lease (the multi-host soak's link cut,
docs/scale-out.md): its claims are taken over, and when it comes back it must not send the
calls it had claimed but not yet sent. The shard's clock is moved instead of waiting."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from decimal import Decimal

import pytest
from django.test import override_settings
from django.utils import timezone

from runs.engine import claims, outcomes, runner, writer
from runs.models import Answer, Run
from tests.helpers.engine import MockLLM, answer_key, execute, mock_run, suite_text, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

LEASE_S = 60.0


class MovedClock:
    """runner's `time`, `offset` seconds ahead (the only function it uses is monotonic)."""

    offset = 0.0

    @classmethod
    def monotonic(cls) -> float:
        return time.monotonic() + cls.offset


@override_settings(EVALSITE_CLAIM_LEASE_S=LEASE_S)
def test_a_claim_taken_over_while_the_shard_was_cut_off_is_not_sent(monkeypatch):
    monkeypatch.setattr(runner, "time", MovedClock)
    monkeypatch.setattr(claims, "time", MovedClock)  # where the take-over check reads it
    monkeypatch.setattr(MovedClock, "offset", 0.0)
    run = mock_run(text=suite_text(models=("mock/a",), cases=2), concurrency=1)
    answers = {answer_key(a): a for a in Answer.objects.filter(run=run)}
    mock = MockLLM(hold=lambda call: call.attempt == 1 and len(mock.calls) == 1)
    shard = execute_in_background(run.id, mock)

    # The first call is in flight; the second is claimed and waits for the slot. The shard is
    # cut off for longer than the lease: another shard takes the second claim and answers it.
    wait_until(lambda: mock.held == 1)
    (sent,) = mock.calls
    taken = next(a for key, a in answers.items() if key != sent.key)
    Answer.objects.filter(pk=taken.pk).update(
        status=Answer.Status.DONE, claimed_by="", text="by the shard that took it over",
        finished_at=timezone.now(),
    )  # fmt: skip
    MovedClock.offset = LEASE_S + 1
    mock.release.set()
    run = shard()

    assert run.status == Run.Status.DONE
    assert mock.count() == 1, "the taken-over claim was sent (and paid) again"
    assert Answer.objects.get(pk=taken.pk).text == "by the shard that took it over"


def execute_in_background(run_id: str, mock: MockLLM):
    import threading

    result: list = []
    thread = threading.Thread(target=lambda: result.append(execute(run_id, mock.transport)))
    thread.start()

    def join() -> Run:
        thread.join(60)
        assert result, "the shard did not return"
        return result[0]

    return join


# --- a claim the shard took again: its older attempt writes nothing -------------------------
#
# A shard cut off past the lease (the soak's link cut) comes back with a call still in flight.
# Another shard's look for expired claims has given that claim back, and the shard's next
# batch may claim the same call again, under the same token. The call's older attempt must
# then count as taken over: CI's soak ended a run with reserved_usd -0.0000217 when it did not
# (the older attempt's outcome released a reservation the claim again had not made).


class _Storing(writer.Writer):
    """The writer's storing step alone, without the loop that writes behind."""

    def __init__(self, claims_: claims.Claims) -> None:
        self.claims, self.scoring = claims_, None


def _shard_claims(run: Run) -> claims.Claims:
    shard = runner.Shard(run.id)
    assert shard._prepare() == Run.Status.RUNNING
    return shard.claims


def _expire(claim: claims.Claim) -> None:
    old = timezone.now() - dt.timedelta(seconds=2 * LEASE_S)
    Answer.objects.filter(pk=claim.call.pk).update(claimed_at=old)


def _another_shards_look(run: Run) -> None:
    assert Answer.objects.filter(run=run).reclaim_expired(run, LEASE_S, judge=False) == 1


def _reserved(run: Run) -> Decimal:
    return Run.objects.get(pk=run.pk).reserved_usd


@override_settings(EVALSITE_CLAIM_LEASE_S=LEASE_S)
def test_an_older_attempt_of_a_call_the_shard_claimed_again_writes_nothing_and_releases_nothing():
    run = mock_run(text=suite_text(models=("mock/a",), cases=1), concurrency=4)
    held = _shard_claims(run)
    (first,) = held.claim(4)
    worst = first.reserved
    assert worst and _reserved(run) == worst
    _expire(first)
    _another_shards_look(run)
    # Other shards' reservations fill the cap meanwhile: the claim again cannot reserve yet.
    others = run.cap_usd - worst / 2
    run.reserve(others)
    (again,) = held.claim(4)
    assert again.call.pk == first.call.pk and again.reserved is None

    _Storing(held).write([outcomes.skipped(first.call, worst)])  # the older attempt ends

    row = Answer.objects.get(pk=first.call.pk)
    assert (row.status, row.attempts) == (Answer.Status.CLAIMED, 2), "the older attempt was written"
    assert _reserved(run) == others
    run.settle(others, None, None, judge=False)
    assert held.reserve_for(again.call, worst)
    _Storing(held).write([outcomes.skipped(again.call, worst)])
    assert Answer.objects.get(pk=first.call.pk).status == Answer.Status.ERROR
    assert _reserved(run) == 0


@override_settings(EVALSITE_CLAIM_LEASE_S=LEASE_S)
def test_an_older_attempt_that_reserves_late_reserves_nothing_and_counts_as_taken_over():
    run = mock_run(text=suite_text(models=("mock/a",), cases=1), concurrency=4)
    held = _shard_claims(run)
    others = run.cap_usd  # the cap is full as the call is claimed: it reserves for itself
    run.reserve(others)
    (first,) = held.claim(4)
    assert first.reserved is None
    run.settle(others, None, None, judge=False)
    _expire(first)
    _another_shards_look(run)
    (again,) = held.claim(4)
    worst = again.reserved
    assert worst and _reserved(run) == worst

    assert not held.reserve_for(first.call, worst)  # the older attempt, still waiting to reserve
    assert _reserved(run) == worst
    assert Answer.objects.get(pk=first.call.pk).reserved_usd == worst
    first.at -= LEASE_S
    assert asyncio.run(held.taken_over(first, db=runner.db))
    again.at -= LEASE_S
    assert not asyncio.run(held.taken_over(again, db=runner.db))


@override_settings(EVALSITE_CLAIM_LEASE_S=0.001)
def test_a_shard_claiming_more_leaves_its_own_claims_older_than_the_lease_alone():
    """Its own are alive: taken back and claimed again, a call slower than the lease would
    have its answer refused as taken over, again and again (a worker resuming a killed run
    with a 1 s lease never finished it, tests/cli/test_run_edges.py)."""
    run = mock_run(text=suite_text(models=("mock/a",), cases=2), concurrency=1)
    held = _shard_claims(run)
    (first,) = held.claim(1)
    time.sleep(0.05)

    (second,) = held.claim(1)  # it looks for expired claims first

    assert second.call.pk != first.call.pk
    row = Answer.objects.get(pk=first.call.pk)
    assert (row.status, row.claimed_by, row.attempts) == ("claimed", held.token, 1)
    assert held.claim(1) == []
