"""`evalsite worker` consumes the configured broker (ORM by default, Redis on the second leg)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import launcher

pytestmark = pytest.mark.processes  # workers, signals, kills: after the parallel pass

ROOT = Path(__file__).resolve().parents[2]
EVALSITE = Path(sys.executable).parent / "evalsite"
ENQUEUE = "from django_q.tasks import async_task; async_task('os.makedirs', {path!r})"


def test_a_worker_runs_an_enqueued_task_and_stops_on_sigterm(tmp_path):
    env = {**os.environ, "EVALSITE_DATA_DIR": str(tmp_path / "data")}
    marker = tmp_path / "done-by-worker"
    migrated = launcher.run(["migrate", "-v0"], env=env)
    assert migrated.returncode == 0, migrated.stderr
    worker = subprocess.Popen(
        [str(EVALSITE), "worker"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        enqueued = launcher.run(["shell", "-c", ENQUEUE.format(path=str(marker))], env=env)
        assert enqueued.returncode == 0, enqueued.stderr
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marker.is_dir(), "the worker never ran the task"
    finally:
        worker.send_signal(signal.SIGTERM)  # what `kill PID` or a process manager sends
        code = worker.wait(timeout=40)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGKILL)  # nothing of the cluster may outlive the test
    assert code == 0, worker.stderr.read()[-2000:]


@pytest.mark.django_db
def test_a_run_no_shard_is_working_on_is_stalled_and_a_live_one_is_not():
    from datetime import timedelta

    from django.utils import timezone

    from runs.models import Answer, Run
    from tests.helpers.factories import make_run

    def answer(run, case, **fields):
        return Answer.objects.create(
            run=run,
            task_id="t",
            case_id=case,
            contestant="fake/small",
            request={},
            request_hash=case,
            **fields,
        )

    stalled = make_run(status=Run.Status.RUNNING)
    answer(stalled, "a")
    answer(stalled, "b", status="claimed", claimed_at=timezone.now() - timedelta(hours=1))
    live = make_run(status=Run.Status.RUNNING)
    answer(live, "a")
    answer(live, "b", status="claimed", claimed_at=timezone.now())
    finished = make_run(status=Run.Status.DONE)
    answer(finished, "a")
    assert list(Run.objects.stalled(600)) == [stalled]
