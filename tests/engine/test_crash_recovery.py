"""Crash safety in one process: expired claims go back to pending, finished work is kept."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from django.db.models import Sum
from django.test import override_settings
from django.utils import timezone

from runs.models import Answer, Run
from tests.helpers.engine import MockLLM, answer_key, execute, mock_run

pytestmark = pytest.mark.django_db(transaction=True)

LEASE_S = 1.5


def claim_as_dead(answers, *, age_s: float) -> None:
    Answer.objects.filter(pk__in=[a.pk for a in answers]).update(
        status=Answer.Status.CLAIMED,
        claimed_by="dead",
        claimed_at=timezone.now() - dt.timedelta(seconds=age_s),
        attempts=1,
    )


def finish_before_the_crash(answer: Answer) -> None:
    Answer.objects.filter(pk=answer.pk).update(
        status=Answer.Status.DONE, text="finished before the crash", finished_at=timezone.now()
    )


@override_settings(EVALSITE_CLAIM_LEASE_S=LEASE_S)
def test_answers_claimed_by_a_dead_shard_are_redone_once_and_finished_ones_never():
    run = mock_run(cases=4)
    answers = list(Answer.objects.filter(run=run))
    Run.objects.filter(pk=run.id).update(status=Run.Status.RUNNING, started_at=timezone.now())
    claim_as_dead(answers[:3], age_s=LEASE_S + 60)
    finish_before_the_crash(answers[3])
    mock = MockLLM()

    run = execute(run.id, mock.transport)

    assert run.status == Run.Status.DONE
    calls = mock.per_key()
    assert calls[answer_key(answers[3])] == 0
    assert all(calls[answer_key(a)] == 1 for a in answers if a != answers[3])
    assert mock.count() == 7
    rows = Answer.objects.filter(run=run)
    assert set(rows.values_list("status", flat=True)) == {Answer.Status.DONE}
    assert rows.get(pk=answers[3].pk).text == "finished before the crash"
    assert not rows.exclude(claimed_by="").exists()
    assert rows.aggregate(total=Sum("cost_usd"))["total"] == run.spent_answers_usd


@override_settings(EVALSITE_CLAIM_LEASE_S=LEASE_S)
def test_a_live_claim_is_left_alone_until_its_lease_expires():
    run = mock_run(cases=2)
    answers = list(Answer.objects.filter(run=run))
    claimed_at = time.monotonic()
    claim_as_dead(answers[:1], age_s=0)
    mock = MockLLM()

    run = execute(run.id, mock.transport)

    assert run.status == Run.Status.DONE
    late = [c for c in mock.calls if c.key == answer_key(answers[0])]
    assert len(late) == 1
    assert late[0].started >= claimed_at + LEASE_S * 0.9
    assert mock.count() == 4


def test_executing_a_finished_run_again_makes_no_call():
    # django-q2 delivers at least once: a redelivered shard of a finished run is a no-op.
    mock = MockLLM()
    run = execute(mock_run(cases=2).id, mock.transport)
    before = list(Answer.objects.filter(run=run).values_list("pk", "finished_at", "cost_usd"))

    again = execute(run.id, mock.transport)

    assert mock.count() == 4
    assert again.status == Run.Status.DONE and again.spent_usd == run.spent_usd
    assert list(Answer.objects.filter(run=run).values_list("pk", "finished_at", "cost_usd")) == (
        before
    )


def test_a_retried_shard_does_only_what_is_pending():
    mock = MockLLM()
    run = mock_run(cases=3)
    answers = list(Answer.objects.filter(run=run))
    Run.objects.filter(pk=run.id).update(status=Run.Status.RUNNING, started_at=timezone.now())
    for answer in answers[:4]:
        finish_before_the_crash(answer)

    run = execute(run.id, mock.transport)

    assert run.status == Run.Status.DONE
    assert sorted(mock.per_key()) == sorted(answer_key(a) for a in answers[4:])
    assert set(mock.per_key().values()) == {1}
