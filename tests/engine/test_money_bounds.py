"""Money stays bounded whatever a provider reports (issue 25 items 7, 10, 17).

A usage of 10^30 or 1e308 tokens is counted at MAX_USAGE_TOKENS: the call is an overrun
that stops the run over budget, its cost recorded, never an OverflowError. A negative count
is no usage (the cost unknown, the report says so). A reply over the reply cap is an error
whose row is small. Whatever state a run ends in, it holds no reservation and no claimed
call.
"""

from __future__ import annotations

import json
import threading
from decimal import Decimal

import httpx
import pytest

from evalsite.core.plan import worst_case
from evalsite.core.pricing import MAX_USAGE_TOKENS, PriceRow, Usage, call_cost
from evalsite.core.providers.base import MAX_REPLY_BYTES, Request
from runs.models import Answer, Call, Endpoint, Run
from tests.helpers.engine import (
    PRICE,
    TOKENS_IN,
    LocalServer,
    MockLLM,
    execute,
    mock_run,
    reply,
    suite_text,
    wait_until,
)

pytestmark = pytest.mark.django_db(transaction=True)


def usage_reply(text: str, usage: str) -> httpx.Response:
    """A Chat Completions 200 whose usage block is `usage`, raw JSON (Python's json reads
    1e308, 1e400 and Infinity, so a provider can send them)."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}}
    body = json.dumps({"choices": [choice | {"finish_reason": "stop"}]})
    return httpx.Response(200, content=f'{body[:-1]}, "usage": {usage}}}'.encode())


def assert_holds_nothing(run: Run) -> None:
    """A final run: no reservation on it, no call of it claimed."""
    run.refresh_from_db()
    assert not run.is_active
    assert run.reserved_usd == 0
    for calls in (run.answers, run.judgements):
        assert not calls.filter(status=Call.Status.CLAIMED).exists()
        assert not calls.exclude(reserved_usd=0).exists()


ROW = PriceRow("mock/a", Decimal(PRICE[0]), Decimal(PRICE[1]))
CLAMPED = call_cost(ROW, Usage(TOKENS_IN, MAX_USAGE_TOKENS))


@pytest.mark.parametrize("huge", ["1" + "0" * 30, "1e308", "1e400", "Infinity"])
def test_a_usage_too_large_to_store_stops_the_run_over_budget_with_its_cost(huge, caplog):
    run = mock_run(cases=2)
    usage = f'{{"prompt_tokens": {TOKENS_IN}, "completion_tokens": {huge}}}'
    mock = MockLLM(lambda call: usage_reply("ok", usage))

    run = execute(run.id, mock.transport)

    assert run.status == Run.Status.ABORTED_OVER_BUDGET, run.detail
    assert f"reported {MAX_USAGE_TOKENS} or more output tokens" in run.detail
    assert "Traceback" not in caplog.text and "OverflowError" not in caplog.text
    over = Answer.objects.filter(run=run, output_tokens=MAX_USAGE_TOKENS)
    assert over.count() == mock.count() == 2  # each model's first call, alone
    assert run.spent_usd == 2 * CLAMPED  # what they reported, counted at the bound
    assert_holds_nothing(run)


@pytest.mark.parametrize("usage", ['{"prompt_tokens": 10, "completion_tokens": -5}',
                                   '{"prompt_tokens": -10, "completion_tokens": 20}',
                                   '{"prompt_tokens": 10, "completion_tokens": -Infinity}',
                                   '{"prompt_tokens": 10, "completion_tokens": NaN}'])  # fmt: skip
def test_a_negative_usage_is_no_usage_and_the_report_says_so(usage):
    run = mock_run(text=suite_text(cases=2, models=("mock/a",)))
    mock = MockLLM(lambda call: usage_reply("ok", usage))

    run = execute(run.id, mock.transport)

    assert run.status == Run.Status.DONE
    answers = Answer.objects.filter(run=run)
    assert [(a.cost_usd, a.input_tokens, a.output_tokens) for a in answers] == [(None,) * 3] * 2
    assert run.spent_usd == 0 and run.cost_incomplete
    assert "some calls reported no usage; costs are a lower bound" in run.report["warnings"]
    assert_holds_nothing(run)


def test_an_answer_over_the_reply_cap_is_an_error_and_its_row_stays_small():
    class Huge(LocalServer):
        def answer(self, index, model, content):
            return b'{"choices": [{"message": {"content": "' + b"x" * (MAX_REPLY_BYTES + 1)

    with Huge(latency=0) as server:
        run = mock_run(text=suite_text(cases=1, models=("mock/a",)))
        Endpoint.objects.filter(name="mock").update(base_url=server.url)
        run = execute(run.id)

    answer = Answer.objects.get(run=run)
    assert (answer.status, answer.error_kind) == (Call.Status.ERROR, "malformed")
    assert "over the 10 MiB reply cap" in answer.error_message
    assert answer.text == "" and len(answer.error_message) < 1000
    assert_holds_nothing(run)


# --- every final state holds nothing -------------------------------------------------------


def test_a_done_run_holds_no_reservation():
    run = execute(mock_run(cases=3).id, MockLLM().transport)
    assert run.status == Run.Status.DONE
    assert_holds_nothing(run)


def test_a_run_failed_by_a_fault_with_calls_in_flight_gives_their_claims_back():
    """mock/b's first call is held in flight when a later call to mock/a raises what no
    adapter should (a bug): the run fails, and the held call's claim and reservation are
    returned rather than left on a finished run."""

    def respond(call):
        if call.model == "mock/a" and call.content != "Echo w1.":
            raise RuntimeError("an adapter bug")
        return reply("ok")

    mock = MockLLM(respond, hold=lambda call: call.model == "mock/b")
    run = execute(mock_run(cases=4).id, mock.transport)

    assert run.status == Run.Status.FAILED and "an adapter bug" in run.detail
    assert mock.count("mock/b") == 1
    assert_holds_nothing(run)


def test_a_cancelled_run_holds_no_reservation():
    run = mock_run(cases=4, concurrency=2)
    mock = MockLLM(hold=lambda call: True)
    shard = threading.Thread(target=execute, args=(run.id, mock.transport), daemon=True)
    shard.start()
    wait_until(lambda: mock.held >= 2)
    Run.objects.get(pk=run.pk).request_cancel()
    mock.release.set()
    shard.join(60)

    assert Run.objects.get(pk=run.pk).status == Run.Status.CANCELLED
    assert_holds_nothing(run)


def test_a_run_aborted_when_the_next_call_no_longer_fits_holds_no_reservation():
    run = mock_run(cases=6)
    per_call = worst_case(Request(**Answer.objects.filter(run=run).first().request), ROW).cost_usd
    Run.objects.filter(pk=run.pk).update(cap_usd=per_call * 3)
    tokens = int(per_call * 1000)  # $0.001 a token at PRICE: each call costs its worst case
    mock = MockLLM(lambda call: reply("ok", prompt_tokens=tokens - 50, completion_tokens=50))

    run = execute(run.id, mock.transport)

    assert run.status == Run.Status.ABORTED_OVER_BUDGET
    assert "no longer fit under the cap" in run.detail
    assert_holds_nothing(run)


# --- a reservation past every column's range ----------------------------------------------


def test_a_stored_call_whose_worst_case_no_cap_covers_stops_the_run_not_an_overflow(caplog):
    """A call stored before max_tokens was bounded at validation (99999999999999999999):
    its worst case cannot fit under any cap, so it is never written as a reservation."""
    run = mock_run(cases=1)
    for answer in Answer.objects.filter(run=run):
        answer.request["max_tokens"] = 99999999999999999999
        answer.save(update_fields=["request"])

    run = execute(run.id, MockLLM().transport)

    assert run.status == Run.Status.ABORTED_OVER_BUDGET, run.detail
    assert "more than the whole cap" in run.detail
    assert "OverflowError" not in caplog.text
    assert_holds_nothing(run)
