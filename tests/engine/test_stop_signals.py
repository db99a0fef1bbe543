"""Stopping a run or a worker (issue 25 items 6 and 18)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading

import pytest
from django.db.models import Sum
from django.test import override_settings

from runs.models import Answer
from tests.engine.test_worker_kill import PLAN, descendants, wait_for
from tests.helpers.cli import ROOT, cli_env, evalsite, sqlite_rows
from tests.helpers.engine import (
    CALL_COST,
    LocalServer,
    MockLLM,
    execute,
    mock_run,
    suite_text,
    wait_until,
)
from tests.ops.test_worker_signals import Worker

pytestmark = pytest.mark.processes  # workers, signals, kills: after the parallel pass
ACTIVE = ("queued", "running", "judging", "reporting")


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


# --- `evalsite run` stopped by a signal at any point ------------------------------------------

# Runs `evalsite run` in this process with a hook that sends this process SIGNAL, TIMES times,
# at POINT: planning (before the plan), stored (the run's row just committed), shard (the
# shard starting), answer (the first answer made), busy (as answer, and the first cancel
# write finds the database locked). At the last three the shard then waits for the cancel to
# be written: a run of fake answers could otherwise end, done, before the handler's turn.
DRIVER = """
import os, signal, sqlite3, sys, time
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
import django
django.setup()
from django.conf import settings
from django.db import OperationalError
from runs.engine import outcomes, runner
from runs.management.commands import run as command
from runs.models import Run

point, times, signum, suite = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def hit():
    for _ in range(times):
        os.kill(os.getpid(), signum)

def cancel_written():
    deadline = time.monotonic() + 60
    with sqlite3.connect(settings.SQLITE_PATH, timeout=20) as db:
        while time.monotonic() < deadline:
            if db.execute("select 1 from runs_run where cancel_requested").fetchone():
                return
            time.sleep(0.01)

def before(module, name, then=None):
    original = getattr(module, name)
    def hooked(*args, **kwargs):
        if not hooked.done:
            hooked.done = True
            hit()
            (then or (lambda: None))()
        return original(*args, **kwargs)
    hooked.done = False
    setattr(module, name, hooked)

def after(module, name):
    original = getattr(module, name)
    def hooked(*args, **kwargs):
        result = original(*args, **kwargs)
        hit()
        return result
    setattr(module, name, hooked)

if point == "planning":
    before(command, "plan_file")
elif point == "stored":
    after(command, "start_plan")
elif point == "shard":
    before(runner.Shard, "_prepare", then=cancel_written)
else:
    before(outcomes, "done", then=cancel_written)
if point == "busy":
    original = Run.request_cancel
    def locked(self):
        Run.request_cancel = original
        raise OperationalError("database is locked")
    Run.request_cancel = locked

from evalsite.console import main
main(["run", suite, "--fake", "--no-cache", "--concurrency", "1"])
"""

CLOSE = "from runs.engine.runner import execute; print('STATUS=' + execute({run_id!r}).status)"


@pytest.mark.parametrize(
    ("point", "times", "signum"),
    [
        ("planning", 1, signal.SIGTERM),
        ("planning", 2, signal.SIGINT),
        ("stored", 1, signal.SIGTERM),
        ("stored", 2, signal.SIGTERM),
        ("stored", 1, signal.SIGINT),
        ("shard", 1, signal.SIGTERM),
        ("shard", 2, signal.SIGTERM),
        ("answer", 1, signal.SIGTERM),
        ("answer", 2, signal.SIGTERM),
        ("answer", 2, signal.SIGINT),
        ("busy", 1, signal.SIGTERM),
        ("busy", 2, signal.SIGTERM),
    ],
)
def test_a_signal_at_any_point_of_evalsite_run_leaves_no_run_for_a_worker_to_finish(
    tmp_path, point, times, signum
):
    data = tmp_path / "data"
    suite = tmp_path / "suite.yaml"
    suite.write_text(suite_text(name="stopped", models=("fake/small",), cases=30))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    process = subprocess.run(
        [sys.executable, str(driver), point, str(times), str(int(signum)), str(suite)],
        cwd=ROOT, env=cli_env(data), capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert process.returncode == 3, process.stderr
    assert "Traceback" not in process.stderr
    runs = sqlite_rows(data, "select id, status, cancel_requested from runs_run")
    if point == "planning":
        assert runs == [] and "nothing was spent" in process.stderr
        return
    ((run_id, status, cancel_requested),) = runs
    assert status == "cancelled" or (status in ACTIVE and cancel_requested), runs
    answered = sqlite_rows(data, "select count(*) from runs_answer where status = 'done'")
    # What a worker does with it: close it, and make no call.
    closed = evalsite(data, "shell", "-c", CLOSE.format(run_id=run_id))
    assert "STATUS=cancelled" in closed.stdout, closed.stderr
    assert sqlite_rows(data, "select count(*) from runs_answer where status = 'done'") == answered
