"""Provider failures during a run: retried, recorded on the answer, and the run goes on."""

from __future__ import annotations

import httpx
import pytest

from evalsite.core.pacing import MAX_ATTEMPTS
from runs.models import Answer, Run
from tests.helpers.engine import MockLLM, answer_key, error, execute, mock_run, reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fast_backoff")]

RETRY_AFTER_S = 0.3


def failing_first(times: int, failure, model: str = "mock/a", content: str = "Echo w1."):
    """A respond function: `failure` for the first `times` calls of one answer, then a reply."""

    def respond(call):
        if call.key == (model, content) and call.attempt <= times:
            return failure(call)
        return reply(f"answer to {call.content}")

    return respond


def answer_for(run: Run, model: str = "mock/a", case: str = "c1") -> Answer:
    return Answer.objects.get(run=run, contestant=model, case_id=case)


def test_a_429_with_retry_after_is_retried_after_the_delay_and_the_answer_is_done():
    run = mock_run(cases=2)
    mock = MockLLM(
        failing_first(1, lambda call: error(429, "slow down", {"retry-after": str(RETRY_AFTER_S)}))
    )

    run = execute(run.id, mock.transport)

    answer = answer_for(run)
    assert answer.status == Answer.Status.DONE and answer.error_kind == ""
    calls = [c for c in mock.calls if c.key == answer_key(answer)]
    assert len(calls) == 2
    assert calls[1].started - calls[0].ended >= RETRY_AFTER_S * 0.95
    assert run.status == Run.Status.DONE


def test_a_5xx_then_success_is_one_done_answer_after_two_calls():
    run = mock_run(cases=2)
    mock = MockLLM(failing_first(1, lambda call: error(503, "overloaded")))

    run = execute(run.id, mock.transport)

    answer = answer_for(run)
    assert answer.status == Answer.Status.DONE
    assert mock.per_key()[answer_key(answer)] == 2
    assert run.status == Run.Status.DONE


def test_a_persistent_5xx_is_a_server_error_after_max_attempts_and_the_run_goes_on():
    run = mock_run(cases=3)
    mock = MockLLM(failing_first(99, lambda call: error(500, "internal")))

    run = execute(run.id, mock.transport)

    failed = answer_for(run)
    assert failed.status == Answer.Status.ERROR
    assert failed.error_kind == "server"
    assert "HTTP 500" in failed.error_message
    assert mock.per_key()[answer_key(failed)] == MAX_ATTEMPTS
    others = Answer.objects.filter(run=run).exclude(pk=failed.pk)
    assert set(others.values_list("status", flat=True)) == {Answer.Status.DONE}
    assert run.status == Run.Status.DONE


def test_a_403_stops_calls_to_that_model_and_records_its_answers_as_errors():
    # One call in flight per model, so "no further call" is exact: with the 403 back,
    # every other mock/a answer must be recorded without reaching the server. (A 401 stops
    # every model behind the key: tests/engine/test_config_stop.py.)
    run = mock_run(cases=4, concurrency=1)
    mock = MockLLM(
        lambda call: (
            error(403, "not allowed to use this model") if call.model == "mock/a" else reply("fine")
        )
    )

    run = execute(run.id, mock.transport)

    assert mock.count("mock/a") == 1
    a = Answer.objects.filter(run=run, contestant="mock/a")
    assert set(a.values_list("status", flat=True)) == {Answer.Status.ERROR}
    assert sorted(a.values_list("error_kind", flat=True)) == [
        "auth",
        "skipped",
        "skipped",
        "skipped",
    ]
    b = Answer.objects.filter(run=run, contestant="mock/b")
    assert set(b.values_list("status", flat=True)) == {Answer.Status.DONE}
    assert mock.count("mock/b") == 4
    assert run.status == Run.Status.DONE


def test_a_timeout_is_retried_then_recorded_as_timeout():
    run = mock_run(cases=2)

    def time_out(call):
        raise httpx.ReadTimeout("read timed out")

    mock = MockLLM(failing_first(99, time_out))

    run = execute(run.id, mock.transport)

    answer = answer_for(run)
    assert answer.status == Answer.Status.ERROR and answer.error_kind == "timeout"
    assert mock.per_key()[answer_key(answer)] == MAX_ATTEMPTS
    assert Answer.objects.filter(run=run, status=Answer.Status.DONE).count() == 3


def test_a_timeout_then_success_is_done():
    run = mock_run(cases=1)

    def time_out(call):
        raise httpx.ReadTimeout("read timed out")

    mock = MockLLM(failing_first(2, time_out))

    execute(run.id, mock.transport)

    answer = answer_for(run)
    assert answer.status == Answer.Status.DONE
    assert mock.per_key()[answer_key(answer)] == 3


def test_a_200_that_is_not_json_is_malformed_and_not_retried():
    run = mock_run(cases=2)
    garbage = lambda call: httpx.Response(200, text="<html>gateway</html>")  # noqa: E731
    mock = MockLLM(failing_first(99, garbage))

    run = execute(run.id, mock.transport)

    answer = answer_for(run)
    assert answer.status == Answer.Status.ERROR and answer.error_kind == "malformed"
    assert mock.per_key()[answer_key(answer)] == 1
    assert run.status == Run.Status.DONE


def test_an_empty_reply_is_recorded_as_empty():
    run = mock_run(cases=2)
    mock = MockLLM(failing_first(99, lambda call: reply("   ")))

    run = execute(run.id, mock.transport)

    answer = answer_for(run)
    assert answer.status == Answer.Status.ERROR and answer.error_kind == "empty"
    assert answer.text == ""
    assert Answer.objects.filter(run=run, status=Answer.Status.DONE).count() == 3


def test_failed_answers_leave_no_reservation_and_cost_nothing():
    run = mock_run(cases=2)
    mock = MockLLM(failing_first(99, lambda call: error(500)))

    run = execute(run.id, mock.transport)

    failed = answer_for(run)
    assert failed.cost_usd is None
    assert run.reserved_usd == 0
    done = Answer.objects.filter(run=run, status=Answer.Status.DONE)
    assert run.spent_answers_usd == sum(a.cost_usd for a in done)


def test_when_every_answer_fails_the_run_fails_naming_the_first_error():
    run = mock_run(cases=1)
    mock = MockLLM(lambda call: error(400, "model not found"))

    run = execute(run.id, mock.transport)

    assert run.status == Run.Status.FAILED
    assert "model not found" in run.detail
