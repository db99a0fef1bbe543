"""What the multi-host soak (bench/soak.py, docs/scale-out.md) found, each reproduced here
without timing."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import IntegrityError, OperationalError
from django.utils import timezone

from runs.engine import tasks
from runs.models import Run
from tests.helpers.factories import make_run

LEASE_S = 600


def _created(run: Run, seconds_ago: float) -> None:
    Run.objects.filter(pk=run.pk).update(
        created_at=timezone.now() - dt.timedelta(seconds=seconds_ago)
    )


@pytest.mark.django_db
def test_a_run_queued_for_a_lease_without_starting_is_stalled():
    # Redis restarted without persistence (or was down at the commit): the run's shards
    # are gone and no worker will ever start it. Found by the soak: the run stayed queued.
    lost = make_run(status=Run.Status.QUEUED)
    _created(lost, LEASE_S + 1)
    waiting = make_run(status=Run.Status.QUEUED)
    _created(waiting, LEASE_S - 60)
    refused = make_run(status=Run.Status.REFUSED)
    _created(refused, LEASE_S + 1)

    assert list(Run.objects.stalled(LEASE_S)) == [lost]


@pytest.mark.django_db
def test_the_workers_sweep_queues_a_shard_for_a_run_whose_shards_were_lost(monkeypatch):
    sent = []
    monkeypatch.setattr(tasks, "async_task", lambda *args, **kwargs: sent.append(args))
    lost = make_run(status=Run.Status.QUEUED)
    _created(lost, 2 * 600 + 1)

    assert tasks.resume_stalled_runs() == [lost.id]
    assert sent == [("runs.engine.tasks.run_shard", lost.id, 1)]
    assert tasks.resume_stalled_runs() == []  # once per two leases, however many look


def test_a_shard_whose_connection_is_terminated_starts_again(monkeypatch):
    # pg_terminate_backend mid-run: the shard's task failed, and django-q2 hands a failed
    # task out again only after Q_CLUSTER["retry"] (an hour). Found by the soak.
    import runs.engine.runner

    outcomes = [OperationalError("terminating connection due to administrator command"), None]
    calls, slept = [], []

    def execute(run_id, *, shards, index, halt):
        calls.append((run_id, shards))
        if error := outcomes.pop(0):
            raise error

    monkeypatch.setattr(runs.engine.runner, "execute", execute)
    monkeypatch.setattr(tasks.time, "sleep", slept.append)

    tasks.run_shard("r1", 2)

    assert calls == [("r1", 2), ("r1", 2)]
    assert slept == [1]


def test_a_shard_gives_up_after_its_reconnects_and_never_retries_other_errors(monkeypatch):
    import runs.engine.runner

    calls = []

    def lost(run_id, *, shards, index, halt):
        calls.append(run_id)
        raise OperationalError("the connection is lost")

    monkeypatch.setattr(runs.engine.runner, "execute", lost)
    monkeypatch.setattr(tasks.time, "sleep", lambda s: None)
    with pytest.raises(OperationalError):
        tasks.run_shard("r1", 1)
    assert len(calls) == tasks.SHARD_RECONNECTS + 1

    def broken(run_id, *, shards, index, halt):
        calls.append(run_id)
        raise IntegrityError("a bug, not the network")

    calls.clear()
    monkeypatch.setattr(runs.engine.runner, "execute", broken)
    with pytest.raises(IntegrityError):
        tasks.run_shard("r1", 1)
    assert calls == ["r1"]


def _claimed_answer(run: Run):
    from runs.models import Answer

    Answer.objects.create(
        run=run, task_id="t", case_id="a", contestant="fake/small", request={}, request_hash="a"
    )
    (claimed,) = Answer.objects.filter(run=run).claim("live-shard", 1)
    return claimed


@pytest.mark.django_db
def test_a_host_whose_clock_runs_ahead_takes_no_live_claim(monkeypatch):
    # Claims are stamped and aged by the database's clock: a reclaiming host whose own clock
    # is ahead by more than the lease would otherwise hand a live shard's calls to another,
    # and they would be made and paid twice.
    from runs.models import Answer

    run = make_run(status=Run.Status.RUNNING)
    claimed = _claimed_answer(run)
    ahead = timezone.now() + dt.timedelta(seconds=LEASE_S + 60)
    monkeypatch.setattr(timezone, "now", lambda: ahead)

    assert Answer.objects.filter(run=run).reclaim_expired(run, LEASE_S, judge=False) == 0
    assert Answer.objects.get(pk=claimed.pk).claimed_by == "live-shard"
    assert Run.objects.stalled(LEASE_S).filter(pk=run.pk).exists() is False


@pytest.mark.django_db
def test_a_claim_older_than_the_lease_by_the_database_clock_is_taken_back():
    from runs.models import Answer

    run = make_run(status=Run.Status.RUNNING)
    claimed = _claimed_answer(run)
    Answer.objects.filter(pk=claimed.pk).update(
        claimed_at=timezone.now() - dt.timedelta(seconds=LEASE_S + 60)
    )

    assert Answer.objects.filter(run=run).reclaim_expired(run, LEASE_S, judge=False) == 1
    assert Answer.objects.get(pk=claimed.pk).status == Answer.Status.PENDING


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_shards_the_broker_refuses_is_stored_and_left_to_the_sweep(monkeypatch):
    # Redis down at the moment of launch: the web stored the run, then answered 500.
    def refused(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to redis-host:6379. Connection refused.")

    monkeypatch.setattr(tasks, "async_task", refused)
    run = make_run(status=Run.Status.QUEUED)

    tasks.enqueue_run(run, shards=2)  # raises nothing

    assert Run.objects.get(pk=run.pk).status == Run.Status.QUEUED


@pytest.mark.django_db
@pytest.mark.parametrize("status", [Run.Status.ABORTED_OVER_BUDGET, Run.Status.FAILED])
def test_the_sweep_returns_what_a_killed_shard_held_on_a_run_another_shard_ended(status):
    # A shard killed outright keeps its claims; when another shard then ended the run, the
    # stalled-run sweep (active runs only) never returned them: a final run held a
    # reservation (issue 25 item 17).
    from decimal import Decimal

    from runs.models import Answer
    from tests.helpers.factories import make_answer

    run = make_run(status=status, reserved_usd=Decimal("0.25"))
    held = make_answer(run, "t", "c1", "fake/small", status=Answer.Status.CLAIMED,
                       claimed_by="killed", reserved_usd=Decimal("0.25"))  # fmt: skip
    Answer.objects.filter(pk=held.pk).update(
        claimed_at=timezone.now() - dt.timedelta(seconds=LEASE_S + 1)
    )
    live = make_run(status=Run.Status.DONE)

    tasks.release_ended_claims()

    run.refresh_from_db()
    assert run.reserved_usd == 0 and run.status == status
    assert not run.answers.filter(status=Answer.Status.CLAIMED).exists()
    assert list(Run.objects.ended_holding_claims(LEASE_S)) == []
    assert live.reserved_usd == 0


@pytest.mark.django_db
def test_the_sweep_finds_a_held_judge_call_and_joins_no_calls_table():
    # The sweep joined the answers and the judgements both, which paired each answer of a
    # run with each of its judge calls: a worker starting beside a finished 100,000-pair run
    # spent minutes of a core in that one query (docs/performance.md, "Pages on a
    # 100,000-pair run"). Each kind of call is now an EXISTS of its own.
    from runs.models import Judgement

    run = make_run(status=Run.Status.FAILED)
    Judgement.objects.create(
        run=run, task_id="t", case_id="c1", request={}, request_hash="h", judge_model="j",
        status=Judgement.Status.CLAIMED, claimed_by="killed",
        claimed_at=timezone.now() - dt.timedelta(seconds=LEASE_S + 1),
    )  # fmt: skip
    make_run(status=Run.Status.DONE)

    sweep = Run.objects.ended_holding_claims(LEASE_S)

    assert list(sweep) == [run]
    assert "JOIN" not in str(sweep.query).upper()
