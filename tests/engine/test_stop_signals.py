"""Stopping a run or a worker (issue 25 items 6 and 18)."""

from __future__ import annotations

import re
import signal
import threading

import pytest
from django.db.models import Sum
from django.test import override_settings

from runs.models import Answer
from tests.engine.conftest import (
    CALL_COST,
    LocalServer,
    MockLLM,
    evalsite,
    execute,
    mock_run,
    sqlite_rows,
    suite_text,
    wait_until,
)
from tests.engine.test_worker_kill import PLAN, descendants, wait_for
from tests.test_worker_signals import Worker


@pytest.mark.django_db(transaction=True)
@override_settings(EVALSITE_CLAIM_LEASE_S=0.01)
def test_a_call_that_lands_after_its_claim_was_taken_over_is_added_to_the_spend():
    run = mock_run(text=suite_text(models=("mock/a",), cases=1), concurrency=1)
    mock = MockLLM(hold=lambda call: call.attempt == 1)
    result: list = []
    thread = threading.Thread(target=lambda: result.append(execute(run.id, mock.transport)))
    thread.start()
    wait_until(lambda: mock.held == 1)
    # The shard is stopped past the lease: another shard takes the claim over and answers it.
    second = MockLLM()
    execute(run.id, second.transport)
    mock.release.set()
    thread.join(60)

    run.refresh_from_db()
    rows = Answer.objects.filter(run=run).aggregate(total=Sum("cost_usd"))["total"]
    assert mock.count() == second.count() == 1  # paid twice
    assert rows == CALL_COST
    assert run.spent_answers_usd == rows + CALL_COST


# --- a worker stopping claims nothing more ---------------------------------------------------


class HeldServer(LocalServer):
    """Answers each call once `release` is set."""

    def __init__(self) -> None:
        super().__init__(latency=0)
        self.release = threading.Event()

    def answer(self, index: int, model: str, content: str) -> bytes:
        self.release.wait(120)
        return super().answer(index, model, content)


def test_sigterm_to_a_busy_worker_lets_its_calls_in_flight_finish_and_claims_nothing_more(
    tmp_path,
):
    data = tmp_path / "data"
    suite = tmp_path / "held.yaml"
    suite.write_text(suite_text(name="held", cases=20, timeout_s=600))
    with HeldServer() as server:
        worker = Worker(data, EVALSITE_WORKER_STOP_GRACE_S="60")
        try:
            worker.wait_until_up()
            plan = PLAN.format(url=server.url, path=str(suite), shards=1)
            planned = evalsite(data, "shell", "-c", plan)
            run_id = re.search(r"RUN_ID=(\S+)", planned.stdout).group(1)
            # each model's first call, held at the server (the others wait for it)
            wait_for(lambda: server.in_flight == 2, 60, "the shard's calls at the server")
            cluster = len(descendants(worker.pgid))

            worker.process.send_signal(signal.SIGTERM)  # the main process only: `kill PID`
            # The idle worker process leaves once the cluster stops: the signal was handled.
            wait_for(lambda: len(descendants(worker.pgid)) < cluster, 60, "the cluster to stop")
            server.release.set()
            assert worker.process.wait(timeout=60) == 0
        finally:
            worker.clean_up()
        stderr = worker.stderr()

    assert "did not stop within" not in stderr  # nothing had to be killed
    assert len(server.calls) == 2, "the shard claimed and sent calls after SIGTERM"
    rows = dict(sqlite_rows(data, "select status, count(*) from runs_answer group by status"))
    assert rows == {"done": 2, "pending": 38}  # nothing left claimed: no call paid twice
    ((status, reserved),) = sqlite_rows(
        data, "select status, reserved_usd from runs_run where id = ?", (run_id,)
    )
    assert status == "running" and reserved == 0  # the next worker goes on with it
