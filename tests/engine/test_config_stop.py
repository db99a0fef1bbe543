"""Provider errors by kind through the engine (issue 26): a configuration 400 stops its
model after one call, a 401 stops every model behind that key, the other contestants
finish and the report says what happened; a 429's retry-after is the wait; a refusal is
recorded as one (paid for, never an empty answer) and a cut-off answer is kept and counted."""

from __future__ import annotations

import threading
from decimal import Decimal
from functools import partial

import httpx
import pytest

from evalsite.core import pacing
from evalsite.core.plan import WorstCase
from evalsite.core.providers.base import refused
from runs.engine import outcomes
from runs.models import Answer, Run
from tests.helpers.engine import (
    TOKENS_OUT,
    MockLLM,
    execute,
    make_endpoint,
    make_mock_prices,
    mock_run,
    plan_run,
    reply,
    suite_text,
    wait_until,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fast_backoff")]

UNSUPPORTED = (
    "Unsupported value: 'temperature' does not support 0 with this model. "
    "Only the default (1) value is supported."
)


def openai_error(status: int, message: str, param=None, code=None, headers=None):
    body = {
        "error": {"message": message, "type": "invalid_request_error", "param": param,
                  "code": code}
    }  # fmt: skip
    return httpx.Response(status, json=body, headers=headers or {})


def kinds(run: Run, contestant: str) -> list[str]:
    rows = Answer.objects.filter(run=run, contestant=contestant)
    return sorted(rows.values_list("error_kind", flat=True))


def warnings(run: Run) -> list[str]:
    run.refresh_from_db()
    return run.report["warnings"]


def test_a_configuration_400_stops_the_model_after_one_call_and_the_others_finish():
    run = mock_run(cases=6)  # the default concurrency: several calls could start at once
    mock = MockLLM(
        lambda call: (
            openai_error(400, UNSUPPORTED, "temperature", "unsupported_value")
            if call.model == "mock/a"
            else reply("fine")
        )
    )

    run = execute(run.id, mock.transport)

    assert mock.count("mock/a") == 1
    assert kinds(run, "mock/a") == ["bad_request"] + ["skipped"] * 5
    first = Answer.objects.get(run=run, contestant="mock/a", error_kind="bad_request")
    assert "parameter temperature" in first.error_message and UNSUPPORTED in first.error_message
    skipped = Answer.objects.filter(run=run, contestant="mock/a", error_kind="skipped").first()
    assert "not called" in skipped.error_message and "bad_request" in skipped.error_message
    assert mock.count("mock/b") == 6 and kinds(run, "mock/b") == [""] * 6
    assert run.status == Run.Status.DONE and run.stopped_models == ["mock/a"]
    stopped = [w for w in warnings(run) if w.startswith("mock/a: stopped")]
    assert len(stopped) == 1
    assert "5 answers not called" in stopped[0] and "parameter temperature" in stopped[0]


class Router:
    """Two OpenAI-compatible endpoints, told apart by host: one key each."""

    def __init__(self, **mocks: MockLLM):
        self.mocks = mocks

    @property
    def transport(self) -> httpx.MockTransport:
        async def handler(request: httpx.Request) -> httpx.Response:
            return await self.mocks[request.url.host.removesuffix(".invalid")].handler(request)

        return httpx.MockTransport(handler)


def test_a_401_stops_every_model_behind_that_key_and_the_other_endpoint_finishes():
    make_endpoint("mock")
    make_endpoint("other")
    make_mock_prices(("mock/a", "mock/b", "other/c"))
    run = plan_run(suite_text(models=("mock/a", "mock/b", "other/c"), cases=4))
    # mock/a's key is refused; mock/b (the same endpoint, the same key) answers, but its
    # first call is held until the 401 has stopped the run's mock models
    mock = MockLLM(
        lambda call: (
            openai_error(401, "Incorrect API key provided.")
            if call.model == "mock/a"
            else reply("fine")
        ),
        hold=lambda call: call.model == "mock/b",
    )
    other = MockLLM(endpoint="other")

    def stopped() -> bool:
        return "mock/a" in Run.objects.get(pk=run.pk).stopped_models

    releaser = threading.Thread(target=lambda: (wait_until(stopped), mock.release.set()))
    releaser.start()

    run = execute(run.id, Router(mock=mock, other=other).transport)
    releaser.join()

    assert mock.count("mock/a") == 1 and mock.count("mock/b") <= 1
    assert kinds(run, "mock/a") == ["auth", "skipped", "skipped", "skipped"]
    assert kinds(run, "mock/b").count("skipped") >= 3
    assert other.count() == 4 and kinds(run, "other/c") == [""] * 4
    assert run.status == Run.Status.DONE
    assert run.stopped_models == ["mock/a", "mock/b"]


def test_a_404_stops_that_model_as_an_unknown_model():
    run = mock_run(cases=3)
    not_found = "The model `a` does not exist or you do not have access to it."
    mock = MockLLM(
        lambda call: (
            openai_error(404, not_found, "model", "model_not_found")
            if call.model == "mock/a"
            else reply("fine")
        )
    )

    run = execute(run.id, mock.transport)

    assert mock.count("mock/a") == 1
    assert kinds(run, "mock/a") == ["skipped", "skipped", "unknown_model"]
    assert run.status == Run.Status.DONE


def test_a_429_with_retry_after_2_waits_the_computed_two_seconds(monkeypatch):
    waits: list[tuple[float | None, float]] = []

    def recorded(attempt, retry_after=None, **kwargs):
        delay = pacing.backoff_delay(attempt, retry_after, **kwargs)
        waits.append((retry_after, delay))
        return 0.01  # the wait computed, not slept: no timed assertion

    monkeypatch.setattr("runs.engine.runner.backoff_delay", partial(recorded))
    run = mock_run(cases=1)
    limited = openai_error(429, "Rate limit reached.", headers={"retry-after": "2"})
    mock = MockLLM(
        lambda call: limited if call.model == "mock/a" and call.attempt == 1 else reply("ok")
    )

    run = execute(run.id, mock.transport)

    assert [retry_after for retry_after, _ in waits] == [2.0]
    assert waits[0][1] >= 2.0
    assert Answer.objects.get(run=run, contestant="mock/a").status == Answer.Status.DONE
    assert mock.count("mock/a") == 2


def refusal_reply(call):
    body = reply("unused").json()
    body["choices"][0]["message"] = {"role": "assistant", "content": None, "refusal": "No."}
    return httpx.Response(200, json=body)


def cut_off_reply(call):
    body = reply("Echo w").json()
    body["choices"][0]["finish_reason"] = "length"
    return httpx.Response(200, json=body)


def test_a_refusal_is_recorded_as_a_paid_refusal_and_counted_in_the_warnings():
    run = mock_run(cases=3)
    mock = MockLLM(
        lambda call: (
            refusal_reply(call)
            if call.key == ("mock/a", "Echo w1.")
            else cut_off_reply(call)
            if call.key == ("mock/b", "Echo w2.")
            else reply("fine")
        )
    )

    run = execute(run.id, mock.transport)

    refused = Answer.objects.get(run=run, contestant="mock/a", case_id="c1")
    assert refused.status == Answer.Status.ERROR and refused.error_kind == "refused"
    assert (refused.error_kind, refused.error_message) == ("refused", "No.")
    assert refused.text == "" and refused.output_tokens == TOKENS_OUT
    assert refused.cost_usd is not None and refused.cost_usd > 0
    assert mock.count("mock/a") == 3  # not retried, and the model goes on
    cut = Answer.objects.get(run=run, contestant="mock/b", case_id="c2")
    assert cut.status == Answer.Status.DONE and cut.text == "Echo w"
    assert cut.finish_reason == "length"
    run.refresh_from_db()
    done = Answer.objects.filter(run=run).exclude(cost_usd=None)
    assert run.spent_answers_usd == sum(a.cost_usd for a in done)
    assert run.report["per_contestant"]["mock/a"]["refused"] == 1
    assert run.report["per_contestant"]["mock/b"]["truncated"] == 1
    assert "mock/a: 1 of 3 answers refused (scored as failures)" in warnings(run)
    assert any(w.startswith("mock/b: 1 of 3 answers cut off at max_tokens") for w in warnings(run))


def test_a_refusal_is_not_cached_and_is_asked_again():
    run = mock_run(cases=1)
    mock = MockLLM(lambda call: refusal_reply(call) if call.model == "mock/a" else reply("ok"))
    execute(run.id, mock.transport)

    again = plan_run(suite_text(cases=1))
    execute(again.id, mock.transport)

    assert mock.count("mock/a") == 2
    assert Answer.objects.get(run=again, contestant="mock/a").error_kind == "refused"


def test_a_refusal_in_a_no_look_run_keeps_its_finish_reason_not_its_words():
    completion = refused(
        "I won't repeat the secret case text.", usage=None, finish_reason="refusal",
        schema_mode=None,
    )  # fmt: skip
    call = Answer(contestant="mock/a", task_id="t", case_id="c", request_hash="h")
    worst = WorstCase(10, 20, Decimal("0.03"))
    sealed = object()  # a no-look run's case data: only its presence is read here

    outcome = outcomes.done(
        call, None, completion, latency_ms=5, worst=worst, row=None, secrets=(), sealed=sealed
    )

    assert outcome.values["error_kind"] == "refused" and outcome.cache_row is None
    assert "secret" not in outcome.values["error_message"]
    assert outcome.values["error_message"].startswith("finish reason refusal;")
