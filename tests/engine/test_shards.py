"""Several shards on one run: every phase is shared, so each shard works with its share, and
what one shard learns of a model (it refused a call) every later one knows."""

from __future__ import annotations

from decimal import Decimal
from unittest.mock import patch

import pytest

from runs.engine import tasks
from runs.models import Answer, Judgement, Pair, Run
from tests.engine.test_spend import run_shards_in_threads
from tests.helpers.engine import (
    MockLLM,
    error,
    execute,
    make_endpoint,
    make_mock_prices,
    mock_run,
    plan_run,
    reply,
    suite_text,
)

pytestmark = pytest.mark.django_db(transaction=True)

VERDICT = '{"reason": "r", "winner": "1"}'


def most_at_once(calls) -> int:
    """The most of `calls` in flight at one moment."""
    edges = sorted([(c.started, 1) for c in calls] + [(c.ended, -1) for c in calls])
    level = peak = 0
    for _, step in edges:
        level += step
        peak = max(peak, level)
    return peak


def test_two_shards_both_judge_so_the_judge_phase_uses_the_whole_concurrency():
    make_endpoint()
    make_mock_prices(("mock/a", "mock/b", "mock/judge"))
    text = suite_text(cases=12).replace("tasks:\n", "judge: {model: mock/judge}\ntasks:\n")
    run = plan_run(text, concurrency=4, max_cost=Decimal("100"))

    def respond(call):
        return reply(VERDICT if call.model == "mock/judge" else f"answer to {call.content}")

    mock = MockLLM(respond, latency=0.2)  # long enough for the second shard to join in

    assert run_shards_in_threads(run.id, mock.transport, shards=2) == []

    run.refresh_from_db()
    assert run.status == Run.Status.DONE, run.detail
    judge_calls = [c for c in mock.calls if c.model == "mock/judge"]
    assert len(judge_calls) == Judgement.objects.filter(run=run).count() == 24
    # Each shard has 2 of the 4 slots; the shard that lost the move to judging joins in.
    assert most_at_once(judge_calls) == 4
    assert Pair.objects.filter(run=run, score__isnull=False).count() == 12


def test_a_model_that_refused_a_call_is_kept_on_the_run_and_no_later_shard_calls_it():
    # A shard resumed after a crash (or any shard joining later) reads the refusal from the
    # run, not from a scan of its answers, and makes no call to that model.
    run = mock_run(cases=3, concurrency=1)
    refuse = MockLLM(
        lambda call: (
            error(403, "not allowed to use this model") if call.model == "mock/a" else reply()
        )
    )

    execute(run.id, refuse.transport)

    run.refresh_from_db()
    assert run.stopped_models == ["mock/a"]
    assert refuse.count("mock/a") == 1

    again = mock_run(cases=3, concurrency=1, no_cache=True)
    Run.objects.filter(pk=again.id).update(stopped_models=["mock/a"])
    mock = MockLLM()

    execute(again.id, mock.transport)

    assert mock.count("mock/a") == 0 and mock.count("mock/b") == 3
    skipped = Answer.objects.filter(run=again, contestant="mock/a")
    assert set(skipped.values_list("error_kind", flat=True)) == {"skipped"}


def test_a_limit_of_one_keeps_one_call_a_model_in_flight_however_many_shards_run():
    # docs/running.md: at most --concurrency calls per model, split between the shards.
    run = mock_run(cases=6, concurrency=1)
    mock = MockLLM(latency=0.05)

    assert run_shards_in_threads(run.id, mock.transport, shards=2) == []

    run.refresh_from_db()
    assert run.status == Run.Status.DONE, run.detail
    for model in ("mock/a", "mock/b"):
        calls = [c for c in mock.calls if c.model == model]
        assert len(calls) == 6 and most_at_once(calls) == 1, model


def test_a_run_with_a_limit_of_one_is_queued_as_one_shard():
    run = mock_run(cases=1, concurrency=1)
    with patch("runs.engine.tasks.async_task") as queued:
        tasks.enqueue_run(run, shards=2)
    assert [c.args for c in queued.call_args_list] == [("runs.engine.tasks.run_shard", run.id, 1)]
    assert [c.kwargs["index"] for c in queued.call_args_list] == [0]
