"""A real django-q2 cluster loses a worker to SIGKILL mid-run: the run still finishes right.

Everything runs in subprocesses of the `evalsite` CLI against one store of its own (the
test's database is not the one the workers see): a temporary SQLite data dir with the ORM
broker, and on the PostgreSQL + Redis leg also a throwaway PostgreSQL database with the
Redis broker. The provider is a local HTTP server with 200 ms of latency behind an
admin-defined Endpoint.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.helpers import launcher
from tests.helpers.cli import EVALSITE, ROOT, cli_env, sqlite_rows
from tests.helpers.engine import LocalServer, suite_text

pytestmark = pytest.mark.processes  # workers, signals, kills: after the parallel pass
CASES = 30  # × 2 contestants = 60 answers, ~3 s of calls across two shards
LEASE_S = 3
FINAL = ("done", "failed", "cancelled", "refused", "aborted_over_budget")
# A run left with no live shard must be picked up again within this: the 3 s lease, then
# up to a minute for a periodic look (a django-q2 Schedule's resolution) and its 30 s
# scheduler tick. django-q2's own redelivery takes Q_CLUSTER["retry"] (65 minutes).
RESUME_BOUND_S = LEASE_S + 120
REDIS_TEST_DB = 13  # a Redis database of its own: the queue key is fixed by the cluster name

PLAN = """
from decimal import Decimal
from evalsite.core.suites import load_suite
from runs.models import Endpoint, Price, PriceTable, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan
from runs.setup import prepare_database
from runs.engine.tasks import enqueue_run

prepare_database()
Endpoint.objects.create(name="mock", base_url={url!r})
table = PriceTable.objects.current()
for model in ("mock/a", "mock/b"):
    Price.objects.create(table=table, model=model, input_per_mtok=1000, output_per_mtok=1000)
loaded = load_suite({path!r})
version, _ = SuiteVersion.objects.register(
    loaded, open({path!r}).read(), origin=SuiteVersion.Origin.PATH, source_path={path!r}
)
run = store_plan(make_plan(version, loaded, RunOptions(concurrency=2, max_cost=Decimal(100))))
enqueue_run(run, shards={shards})
print("RUN_ID=" + run.id)
"""


class Store:
    """Where the workers keep their state, and how the test reads it from outside."""

    def __init__(self, data: Path, env: dict[str, str], database_url: str | None = None):
        self.data = data
        self.env = env
        self.database_url = database_url

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        if self.database_url is None:
            return sqlite_rows(self.data, sql, params)
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as connection:
            return connection.execute(sql.replace("?", "%s"), params).fetchall()


def _sqlite_store(tmp_path: Path) -> Iterator[Store]:
    data = tmp_path / "data"
    yield Store(data, cli_env(data))


def _postgres_redis_store(tmp_path: Path) -> Iterator[Store]:
    import psycopg
    import redis

    server = urlsplit(os.environ["DATABASE_URL"])
    name = f"evalsite_kill_{secrets.token_hex(4)}"
    url = urlunsplit(server._replace(path=f"/{name}"))
    admin = urlunsplit(server._replace(path="/postgres"))
    queue = urlunsplit(
        urlsplit(os.environ["EVALSITE_REDIS_URL"])._replace(path=f"/{REDIS_TEST_DB}")
    )
    redis.from_url(queue).delete("django_q:evalsite:q")
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    data = tmp_path / "data"
    try:
        yield Store(data, cli_env(data, DATABASE_URL=url, EVALSITE_REDIS_URL=queue), url)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


BACKENDS = ["sqlite-orm"]
if os.environ.get("DATABASE_URL") and os.environ.get("EVALSITE_REDIS_URL"):
    BACKENDS.append("postgres-redis")


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    make = _sqlite_store if request.param == "sqlite-orm" else _postgres_redis_store
    yield from make(tmp_path)


@contextmanager
def cluster(store: Store, *, wait_until_up: bool = True):
    """`evalsite worker` (two worker processes, a 3 s claim lease) until the block ends.

    With `wait_until_up`, the block starts once the cluster has spawned its processes, so
    the worker's start-up look for stalled runs is over before the test plans one.
    """
    env = store.env | {"EVALSITE_WORKERS": "2", "EVALSITE_CLAIM_LEASE_S": str(LEASE_S)}
    worker = subprocess.Popen(
        [str(EVALSITE), "worker"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        if wait_until_up:
            wait_for(lambda: len(descendants(worker.pid)) >= 4, 60, "the cluster to start")
        yield worker
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)  # the session we started, by its id
            worker.wait()


def descendants(root: int) -> set[int]:
    """Every process below `root` (from /proc/*/status PPid)."""
    parents: dict[int, int] = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            match = re.search(r"^PPid:\s+(\d+)", status.read_text(), re.M)
        except OSError:
            continue
        if match:
            parents[int(status.parent.name)] = int(match.group(1))
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def plan(store: Store, server: LocalServer, suite: Path, *, shards: int) -> str:
    code = PLAN.format(url=server.url, path=str(suite), shards=shards)
    result = launcher.run(["shell", "-c", code], env=store.env)
    assert result.returncode == 0, result.stderr
    return re.search(r"RUN_ID=(\S+)", result.stdout).group(1)


def shard_pids(store: Store, run_id: str) -> Counter[int]:
    """Claimed answers per shard process (the claim token starts with the shard's pid)."""
    rows = store.rows(
        "select claimed_by from runs_answer where run_id = ? and status = 'claimed'", (run_id,)
    )
    return Counter(int(token.split("-")[0]) for (token,) in rows if token)


def run_row(store: Store, run_id: str) -> dict:
    columns = ("status", "detail", "spent_answers_usd", "reserved_usd")
    sql = "select status, detail, spent_answers_usd, reserved_usd from runs_run where id = ?"
    values = store.rows(sql, (run_id,))
    return dict(zip(columns, values[0], strict=True))


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def kill_a_shard_mid_call(store, server, worker, run_id: str, *, shards: int) -> set:
    """SIGKILL one shard's process while its calls are at the server; what it held then."""
    # With two shards each has at most two calls in flight (one per model), so four at the
    # server means the shard killed below dies holding calls and the reservations made for
    # them; a lone shard may have four, and two or more will do.
    wait_for(
        lambda: len(shard_pids(store, run_id)) == shards and server.in_flight >= 2 * shards,
        60,
        f"{shards} shard(s) with calls in flight",
    )
    victim = max(shard_pids(store, run_id))
    assert victim in descendants(worker.pid), "the claim holder is not our worker"
    os.kill(victim, signal.SIGKILL)
    held = store.rows(
        "select contestant, request from runs_answer where run_id = ? and status = 'claimed' "
        "and claimed_by like ?",
        (run_id, f"{victim}-%"),
    )
    assert held, "the killed shard held no claim"
    return {(contestant, _user_content(request)) for contestant, request in held}


def assert_finished_once(store: Store, run_id: str, final: dict, calls: Counter, held: set):
    assert final["status"] == "done", final
    statuses = store.rows(
        "select status, count(*) from runs_answer where run_id = ? group by status", (run_id,)
    )
    assert statuses == [("done", 2 * CASES)]
    answers = store.rows(
        "select contestant, request, cost_usd from runs_answer where run_id = ?", (run_id,)
    )
    assert set(calls) == {(c, _user_content(request)) for c, request, _ in answers}
    # Only what the dead shard had in flight may have been asked twice; nothing three times.
    asked_twice = {key for key, n in calls.items() if n > 1}
    assert asked_twice, "the shard was not killed mid-call"
    assert asked_twice <= held and max(calls.values()) == 2
    # Spend counted once per stored answer, and nothing left reserved by the dead shard.
    assert _money(final["spent_answers_usd"]) == sum(_money(cost) for _, _, cost in answers)
    assert _money(final["reserved_usd"]) == 0, (
        f"the dead shard's reservation was never released: {final['reserved_usd']}"
    )


def test_a_worker_killed_mid_run_leaves_a_run_that_finishes_with_every_answer_once(store, tmp_path):
    suite = tmp_path / "faults.yaml"
    suite.write_text(suite_text(name="killed", cases=CASES))
    with LocalServer(latency=0.2) as server:
        with cluster(store) as worker:
            run_id = plan(store, server, suite, shards=2)
            held = kill_a_shard_mid_call(store, server, worker, run_id, shards=2)
            final = wait_for(
                lambda: (row := run_row(store, run_id))["status"] in FINAL and row, 90, "the run"
            )
        calls = Counter(server.calls)

    assert_finished_once(store, run_id, final, calls, held)


def test_a_run_whose_only_shard_is_killed_still_finishes(store, tmp_path):
    # No live shard is left to take the expired claims: the cluster must hand the run's
    # work out again within a bounded time. django-q2 redelivers an ORM task only after
    # Q_CLUSTER["retry"] (65 minutes) and the Redis broker never redelivers a dequeued
    # task; the worker's own look for stalled runs happens only when `evalsite worker`
    # starts, and a reincarnated worker process does not start it.
    suite = tmp_path / "faults.yaml"
    suite.write_text(suite_text(name="lonely", cases=CASES))
    with LocalServer(latency=0.2) as server:
        with cluster(store) as worker:
            run_id = plan(store, server, suite, shards=1)
            held = kill_a_shard_mid_call(store, server, worker, run_id, shards=1)
            final = wait_for(
                lambda: (row := run_row(store, run_id))["status"] in FINAL and row,
                RESUME_BOUND_S,
                "the run to finish after its only shard died",
            )
        calls = Counter(server.calls)

    assert_finished_once(store, run_id, final, calls, held)


def test_a_worker_starting_while_shards_wait_in_the_queue_keeps_the_per_model_limit(
    store, tmp_path
):
    # Planned (and its one shard queued) before any worker runs, as with `evalsite serve`
    # starting after a run was submitted: the per-model limit (2) holds for the run as a
    # whole, however many shards and workers take part (SPEC section 6.3).
    suite = tmp_path / "faults.yaml"
    suite.write_text(suite_text(name="queued", cases=CASES))
    with LocalServer(latency=0.2) as server:
        run_id = plan(store, server, suite, shards=1)
        with cluster(store, wait_until_up=False):
            final = wait_for(
                lambda: (row := run_row(store, run_id))["status"] in FINAL and row, 90, "the run"
            )
        calls = Counter(server.calls)

    assert final["status"] == "done", final
    assert set(calls.values()) == {1}, "an answer was asked for twice"
    assert max(server.max_in_flight_by_model.values()) <= 2, dict(server.max_in_flight_by_model)


def _money(value) -> Decimal:
    """A decimal column read raw (SQLite gives a REAL): rounded as Django's converter does."""
    return Decimal(str(value)).quantize(Decimal("0.00000001"))


def _user_content(request_json) -> str:
    request = json.loads(request_json) if isinstance(request_json, str) else request_json
    return [m["content"] for m in request["messages"] if m["role"] == "user"][-1]
