"""Progress is counted from the rows: it matches them during a run and after it."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db.models import Sum

from runs.engine import runner
from runs.models import Answer, Run
from runs.results.progress import progress
from tests.helpers.engine import CALL_COST, MockLLM, error, execute, mock_run, reply, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fast_backoff")]

HELD = {"Echo w4.", "Echo w5.", "Echo w6."}


def row_counts(run: Run) -> dict[str, int]:
    answers = Answer.objects.filter(run=run)
    return {
        "total": answers.count(),
        "pending": answers.filter(status=Answer.Status.PENDING).count(),
        "claimed": answers.filter(status=Answer.Status.CLAIMED).count(),
        "done": answers.filter(status=Answer.Status.DONE).count(),
        "errors": answers.filter(status=Answer.Status.ERROR).count(),
        "cache_hits": answers.filter(cached=True).count(),
    }


def snapshot_counts(snap) -> dict[str, int]:
    return {
        key: getattr(snap, key)
        for key in ("total", "pending", "claimed", "done", "errors", "cache_hits")
    }


def test_progress_matches_the_rows_during_and_after_a_run():
    run = mock_run(cases=6, concurrency=2)

    def respond(call):
        if call.key == ("mock/a", "Echo w1."):
            return error(500, "down")
        return reply(f"answer to {call.content}")

    mock = MockLLM(respond, hold=lambda call: call.content in HELD)
    before = progress(run)
    assert snapshot_counts(before) == row_counts(run) | {"pending": 12}
    assert before.status == Run.Status.QUEUED and before.eta_s is None and before.fraction == 0
    thread = threading.Thread(
        target=runner.execute, args=(run.id,), kwargs={"transport": mock.transport}
    )
    thread.start()
    try:
        # Cases 1-3 finish (one of them an error); four calls of cases 4-5 hang at the server.
        wait_until(
            lambda: mock.held == 4 and row_counts(run)["done"] + row_counts(run)["errors"] == 6
        )
        during = progress(run)
        counts = row_counts(run)
    finally:
        mock.release.set()
        thread.join(30)

    assert snapshot_counts(during) == counts
    assert (during.done, during.errors) == (5, 1)
    assert during.claimed >= 4 and during.pending + during.claimed == 6
    assert during.status == Run.Status.RUNNING
    assert during.spent_usd == 5 * CALL_COST
    assert during.reserved_usd > 0
    assert during.cap_usd == run.cap_usd
    assert during.eta_s is not None and during.eta_s > 0
    assert during.fraction == pytest.approx(0.5)

    after = progress(run)
    assert snapshot_counts(after) == row_counts(run)
    assert (after.total, after.done, after.errors, after.pending, after.claimed) == (
        12,
        11,
        1,
        0,
        0,
    )
    assert after.status == Run.Status.DONE and after.fraction == 1.0 and after.eta_s is None
    assert after.reserved_usd == 0
    assert (
        after.spent_usd
        == 11 * CALL_COST
        == Answer.objects.filter(run=run).aggregate(total=Sum("cost_usd"))["total"]
    )
    assert after.elapsed_s is not None and after.elapsed_s > 0
    assert after.as_dict()["spent_usd"] == str(after.spent_usd)


def test_progress_counts_cache_hits():
    mock = MockLLM()
    execute(mock_run(cases=2).id, mock.transport)
    second = execute(mock_run(cases=2).id, mock.transport)

    snap = progress(second)

    assert snap.cache_hits == snap.done == snap.total == 4
    assert snap.spent_usd == Decimal(0)


def test_a_finished_judged_run_counts_its_judge_calls_not_its_answers():
    # `evalsite run` prints the final progress line after the run ended: it was
    # "12/12 answers" below the judging line it had already printed.
    from tests.helpers.factories import make_judged_run

    run = make_judged_run(
        sides={("greet", "one"): ("candidate", "candidate"), ("greet", "two"): ("tie", "tie")}
    )

    snap = progress(run)

    assert (snap.phase, snap.total, snap.done) == ("judge calls", 4, 4)
