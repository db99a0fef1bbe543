"""Cancel mid-run: the run stops between calls, keeps what finished, leaves the rest pending."""

from __future__ import annotations

import threading
import time

import pytest
from django.db.models import Sum

from runs.engine import runner
from runs.models import Answer, Run
from tests.helpers.engine import MockLLM, error, execute, mock_run, reply, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def stop_seen(monkeypatch) -> list[float]:
    """When a shard first noticed it must stop (time.monotonic, the mock's clock)."""
    seen: list[float] = []
    original = runner.Shard._check_stop

    async def check_stop(self) -> None:
        await original(self)
        if self.stopping and not seen:
            seen.append(time.monotonic())

    monkeypatch.setattr(runner.Shard, "_check_stop", check_stop)
    return seen


def execute_in_background(run_id: str, transport) -> tuple[threading.Thread, list]:
    result: list = []
    thread = threading.Thread(
        target=lambda: result.append(runner.execute(run_id, transport=transport)), daemon=True
    )
    thread.start()
    return thread, result


def test_cancel_mid_run_keeps_finished_answers_and_starts_no_call_after_it_is_seen(stop_seen):
    run = mock_run(cases=10, concurrency=1)
    mock = MockLLM(latency=0.3)
    thread, result = execute_in_background(run.id, mock.transport)
    wait_until(lambda: sum(1 for c in mock.calls if c.ended) >= 4)

    assert Run.objects.get(pk=run.id).request_cancel()
    thread.join(30)

    assert not thread.is_alive() and result
    run = result[0]
    assert run.status == Run.Status.CANCELLED
    assert stop_seen, "the shard never noticed the cancel"
    assert [c for c in mock.calls if c.started > stop_seen[0]] == []
    answers = Answer.objects.filter(run=run)
    done = answers.filter(status=Answer.Status.DONE)
    assert done.count() == mock.count() >= 4  # calls in flight at the cancel were kept too
    assert all(text.startswith("answer to") for text in done.values_list("text", flat=True))
    assert answers.filter(status=Answer.Status.PENDING).count() == 20 - done.count() > 0
    assert not answers.filter(status__in=[Answer.Status.CLAIMED, Answer.Status.ERROR]).exists()
    assert not answers.filter(status=Answer.Status.PENDING).exclude(claimed_by="").exists()
    assert run.reserved_usd == 0
    assert done.aggregate(total=Sum("cost_usd"))["total"] == run.spent_answers_usd


def test_a_cancel_during_a_retry_wait_makes_no_further_call(stop_seen):
    # mock/a is rate limited with a one-second Retry-After; the cancel lands in that wait.
    run = mock_run(cases=1, concurrency=1)

    def respond(call):
        if call.model == "mock/a":
            return error(429, "slow down", {"retry-after": "1"})
        return reply("fine")

    mock = MockLLM(respond)
    thread, result = execute_in_background(run.id, mock.transport)
    wait_until(lambda: mock.count("mock/a") == 1 and mock.calls[0].ended)

    Run.objects.get(pk=run.id).request_cancel()
    thread.join(30)

    assert result and result[0].status == Run.Status.CANCELLED
    assert stop_seen
    assert [c for c in mock.calls if c.started > stop_seen[0]] == []
    assert mock.count("mock/a") == 1
    a = Answer.objects.get(run=run, contestant="mock/a")
    assert a.status in (Answer.Status.PENDING, Answer.Status.ERROR)
    assert result[0].reserved_usd == 0


def test_cancelling_a_finished_run_changes_nothing():
    mock = MockLLM()
    run = execute(mock_run(cases=1).id, mock.transport)

    assert run.request_cancel() is False
    run.refresh_from_db()
    assert run.status == Run.Status.DONE and not run.cancel_requested
