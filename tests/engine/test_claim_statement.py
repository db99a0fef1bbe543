"""The claim as one conditional UPDATE … RETURNING (CallQuerySet.claim), on whichever
database the tests run on (SQLite, or PostgreSQL with DATABASE_URL): what it writes, what
it reads back, and what it leaves alone."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs.models import Answer, Judgement, Pair, Run
from tests.helpers.factories import make_run

REQUEST = {"model": "fake/small", "messages": [{"role": "user", "content": "Hi"}]}


def _answers(run: Run, n: int, *, contestant: str = "fake/small") -> list[Answer]:
    return [
        Answer.objects.create(
            run=run, task_id="t", case_id=f"c{i}", contestant=contestant,
            request=REQUEST | {"n": i}, request_hash=f"{contestant}-{i}",
        )
        for i in range(n)
    ]  # fmt: skip


@pytest.mark.django_db
def test_a_claim_is_one_statement_and_marks_what_it_returns():
    run = make_run(status=Run.Status.RUNNING)
    made = _answers(run, 5)
    before = timezone.now() - dt.timedelta(seconds=5)

    with CaptureQueriesContext(connection) as queries:
        claimed = Answer.objects.filter(run=run).claim("shard-a", 3)

    assert len(queries.captured_queries) == 1
    assert [a.pk for a in claimed] == sorted(a.pk for a in claimed)
    assert len(claimed) == 3
    for answer in claimed:
        row = Answer.objects.get(pk=answer.pk)
        assert (row.status, row.claimed_by, row.attempts) == ("claimed", "shard-a", 1)
        assert row.claimed_at is not None and row.claimed_at > before
        # read back as the row holds it, converted as the ORM converts it
        assert answer.request == row.request and answer.request_hash == row.request_hash
        assert (answer.status, answer.claimed_by, answer.claimed_at) == (
            row.status, row.claimed_by, row.claimed_at
        )  # fmt: skip
        assert (answer.run_id, answer.model) == (run.pk, "fake/small")
        assert str(answer) == str(row)
    assert Answer.objects.filter(pk__in=[a.pk for a in made], status="pending").count() == 2


@pytest.mark.django_db
def test_a_claimed_call_reads_only_its_claim_columns_and_the_rest_from_its_row():
    run = make_run(status=Run.Status.RUNNING)
    (answer,) = _answers(run, 1)
    Answer.objects.filter(pk=answer.pk).update(error_message="kept")

    (claimed,) = Answer.objects.filter(run=run).claim("shard-a", 1)

    assert (
        "text" in claimed.get_deferred_fields() and "request" not in claimed.get_deferred_fields()
    )
    assert claimed.error_message == "kept"  # a deferred field is read when asked for


@pytest.mark.django_db
def test_two_shards_never_share_a_row_and_nothing_is_claimed_twice():
    run = make_run(status=Run.Status.RUNNING)
    _answers(run, 7)

    first = Answer.objects.filter(run=run).claim("shard-a", 4)
    second = Answer.objects.filter(run=run).claim("shard-b", 4)
    third = Answer.objects.filter(run=run).claim("shard-c", 4)

    assert (len(first), len(second), third) == (4, 3, [])
    assert not {a.pk for a in first} & {a.pk for a in second}
    assert set(Answer.objects.filter(run=run).values_list("attempts", flat=True)) == {1}


@pytest.mark.django_db
def test_a_claim_takes_only_its_own_runs_calls_and_only_those_of_an_active_run():
    run, other = make_run(status=Run.Status.RUNNING), make_run(status=Run.Status.RUNNING)
    _answers(other, 2)
    stopped = make_run(status=Run.Status.CANCELLED)
    _answers(stopped, 2)

    assert Answer.objects.filter(run=run).claim("shard-a", 5) == []
    assert Answer.objects.filter(run=stopped).claim("shard-a", 5) == []
    assert not Answer.objects.filter(run=stopped).exclude(status="pending").exists()
    assert Answer.objects.filter(run=run).claim("shard-a", 0) == []


@pytest.mark.django_db
def test_a_claim_keeps_the_querysets_filters():
    run = make_run(status=Run.Status.RUNNING)
    _answers(run, 2)
    _answers(run, 2, contestant="fake/large")

    claimed = Answer.objects.filter(run=run, contestant="fake/large").claim("shard-a", 5)

    assert {a.contestant for a in claimed} == {"fake/large"} and len(claimed) == 2


@pytest.mark.django_db
def test_a_reclaimed_call_is_claimed_again_with_its_attempts_counted():
    run = make_run(status=Run.Status.RUNNING)
    _answers(run, 1)
    Answer.objects.filter(run=run).claim("dead-shard", 1)
    Answer.objects.filter(run=run).update(claimed_at=timezone.now() - dt.timedelta(hours=1))
    assert Answer.objects.filter(run=run).reclaim_expired(run, 60, judge=False) == 1

    (again,) = Answer.objects.filter(run=run).claim("live-shard", 1)

    assert (again.claimed_by, again.attempts) == ("live-shard", 2)


@pytest.mark.django_db
def test_a_judge_call_is_read_back_with_what_reading_its_reply_needs():
    run = make_run(status=Run.Status.JUDGING)
    base, cand = _answers(run, 1)[0], _answers(run, 1, contestant="fake/large")[0]
    pair = Pair.objects.create(
        run=run, task_id="t", case_id="c0", baseline=base, candidate=cand,
        baseline_contestant="fake/small", candidate_contestant="fake/large",
    )  # fmt: skip
    Judgement.objects.create(
        run=run, task_id="t", case_id="c0", judge_model="fake/judge", pair=pair, order=2,
        request=REQUEST, request_hash="j", retried=True, cost_usd=Decimal("0.25"),
        input_tokens=3, output_tokens=4,
    )  # fmt: skip

    (call,) = Judgement.objects.filter(run=run).claim("shard-a", 1)

    with CaptureQueriesContext(connection) as queries:
        read = (call.model, call.kind, call.order, call.pair_id, call.retried, call.request)
        spent = (call.cost_usd, call.input_tokens, call.output_tokens)
    assert queries.captured_queries == []  # nothing deferred is read (the engine is async)
    assert read == ("fake/judge", "pair", 2, pair.pk, True, REQUEST)
    assert spent == (Decimal("0.25"), 3, 4)
