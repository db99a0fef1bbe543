"""`evalsite worker` stops in bounded time however SIGTERM arrives: to its whole process group
(`timeout`, `kill -- -PGID`, systemd), to its main process only (`kill PID`, serve), with a
shard busy on a slow server, and with the main process killed outright.

Each test starts a real worker in a session of its own and watches every process of that
session's group. The bound (30 s) is a generous functional one, not a speed target: before
the fix, a group SIGTERM hung the main process for ever in two tries out of three.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engine.test_worker_kill import PLAN, descendants, wait_for
from tests.helpers import launcher
from tests.helpers.cli import EVALSITE, ROOT, cli_env
from tests.helpers.engine import LocalServer, suite_text

BOUND_S = 30
GRACE_S = 3  # EVALSITE_WORKER_STOP_GRACE_S for the busy cases (the default is 10)

pytestmark = [
    pytest.mark.processes,  # kills and signals workers: after the parallel pass, a file a core
    pytest.mark.skipif(sys.platform != "linux", reason="reads /proc"),
]


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group `pgid`, from /proc/*/stat."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _ppid, group = stat.read_text().rpartition(")")[2].split()[:3]
        except (OSError, ValueError):
            continue
        if int(group) == pgid and state != "Z":
            members.append(int(stat.parent.name))
    return members


class Worker:
    """`evalsite worker` in its own session (its pid is its process group's id)."""

    def __init__(self, data: Path, **env: str):
        self.process = subprocess.Popen(
            [str(EVALSITE), "worker"],
            cwd=ROOT,
            env=cli_env(data, EVALSITE_WORKERS="2", **env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.pgid = self.process.pid

    def wait_until_up(self) -> None:
        # The sentinel, two workers, the monitor and the pusher.
        wait_for(lambda: len(descendants(self.pgid)) >= 5, 120, "the cluster to start")

    def signal_and_wait(self, signum: int, *, group: bool) -> None:
        """Send `signum`; wait until no process of the group is left (fails past BOUND_S).

        The main process is not reaped before the group is empty: while it is a zombie its
        id cannot be given to another process group (pids wrap at 32768 here)."""
        started = time.monotonic()
        (os.killpg if group else os.kill)(self.pgid, signum)
        while time.monotonic() - started < BOUND_S:
            if not group_members(self.pgid):
                return
            time.sleep(0.1)
        left = group_members(self.pgid)
        raise AssertionError(f"{len(left)} worker processes still running after {BOUND_S}s")

    def stderr(self) -> str:
        return self.process.communicate(timeout=10)[1]

    def clean_up(self) -> None:
        if self.process.returncode is None:  # not reaped yet: the group id is still ours
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pgid, signal.SIGKILL)
            self.process.wait(timeout=10)


@pytest.fixture
def workers(tmp_path):
    started: list[Worker] = []

    def start(**env: str) -> Worker:
        started.append(Worker(tmp_path / "data", **env))
        started[-1].wait_until_up()
        return started[-1]

    yield start
    for worker in started:
        worker.clean_up()


def test_sigterm_to_the_whole_group_stops_every_process_of_an_idle_worker(workers):
    for _ in range(3):  # the hang was intermittent
        worker = workers()
        worker.signal_and_wait(signal.SIGTERM, group=True)
        assert worker.process.wait(timeout=10) == 0, worker.stderr()[-2000:]


def test_sigterm_to_the_main_process_only_stops_an_idle_worker_cleanly(workers):
    worker = workers()
    worker.signal_and_wait(signal.SIGTERM, group=False)
    assert worker.process.wait(timeout=10) == 0
    assert "did not stop within" not in worker.stderr()  # stopped by itself, nothing killed


@pytest.mark.parametrize("group", [False, True], ids=["main-process", "whole-group"])
def test_sigterm_stops_a_worker_whose_shard_waits_on_a_slow_server(workers, tmp_path, group):
    data = tmp_path / "data"
    suite = tmp_path / "slow.yaml"
    suite.write_text(suite_text(name="slow", cases=4, timeout_s=600))
    with LocalServer(latency=600) as server:
        worker = workers(EVALSITE_WORKER_STOP_GRACE_S=str(GRACE_S))
        plan = PLAN.format(url=server.url, path=str(suite), shards=1)
        planned = launcher.run(["shell", "-c", plan], env=cli_env(data))
        assert re.search(r"RUN_ID=\S+", planned.stdout), planned.stderr
        wait_for(lambda: server.in_flight >= 1, 60, "a shard's call at the slow server")

        worker.signal_and_wait(signal.SIGTERM, group=group)

    assert worker.process.wait(timeout=10) == 0
    if not group:  # the shard cannot finish: the grace ran out and the rest was killed
        assert "did not stop within" in worker.stderr()


def test_a_worker_killed_outright_leaves_no_cluster_process_behind(workers):
    worker = workers()
    worker.signal_and_wait(signal.SIGKILL, group=False)
