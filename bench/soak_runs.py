"""The soak's runs: planned and queued as the web page does, and watched while they go.

A run is planned as a dry run (the planner stands in for the provider key, which only the
workers hold), stored and queued with ``runs.engine.tasks.enqueue_run`` — the web's launch path
without its check that the *web* process holds the key. Each run has its own concurrency and
its own cap; the sampler reads every run's ``spent`` and ``reserved`` several times a second,
so a cap passed at any moment is seen, not only at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from database import SuiteShape, write_suite

FINAL = {"done", "failed", "cancelled", "refused", "aborted_over_budget"}


@dataclass
class Launched:
    run_id: str
    shape: SuiteShape
    concurrency: int
    cap: Decimal
    queued: str  # "" when its shards were queued, else why not (the broker was down)


def plan_and_queue(
    folder: Path,
    shape: SuiteShape,
    concurrency: int,
    *,
    cap_factor: float,
    label: str,
    shards: int = 2,
) -> Launched:
    """Plan a generated suite's run (a dry run: no key here), cap it at `cap_factor` × its
    estimate, store it and queue `shards` shards after the commit. A run stored whose shards
    could not be queued (the broker down at that moment) is returned too: the engine has to
    pick it up."""
    from evalsite.core.suites import load_suite
    from runs.engine.tasks import enqueue_run
    from runs.models import Run, SuiteVersion
    from runs.planning.planner import RunOptions, make_plan, store_plan

    path = write_suite(folder, shape)
    loaded = load_suite(path)
    version, _ = SuiteVersion.objects.register(
        loaded, path.read_text("utf-8"), origin=SuiteVersion.Origin.PATH, source_path=str(path)
    )
    options = RunOptions(
        no_cache=True, concurrency=concurrency, max_cost=Decimal(1000), label=label, dry_run=True
    )
    plan = make_plan(version, loaded, options)
    cap = (Decimal(plan.estimate["total_usd"]) * Decimal(str(cap_factor))).quantize(
        Decimal("0.000001")
    ) + Decimal("0.000001")
    run = store_plan(dataclasses.replace(plan, cap=cap))
    if run.status != Run.Status.QUEUED:
        raise RuntimeError(f"run not queued: {run.status}: {run.detail}")
    try:
        enqueue_run(run, shards=shards)  # outside a transaction: sent at once
    except Exception as error:  # noqa: BLE001 - redis.ConnectionError and its kin
        return Launched(run.id, shape, concurrency, cap, f"{type(error).__name__}: {error}")
    return Launched(run.id, shape, concurrency, cap, "")


@dataclass
class Sample:
    over_cap: dict[str, Decimal] = field(default_factory=dict)  # worst spent+reserved - cap
    samples: int = 0
    errors: int = 0
    statuses: dict[str, str] = field(default_factory=dict)


class Sampler(threading.Thread):
    """Reads spent_usd, reserved_usd and the status of the watched runs every `period` s."""

    def __init__(self, period: float = 0.25) -> None:
        super().__init__(name="sampler", daemon=True)
        self.period = period
        self.watched: set[str] = set()
        self.seen = Sample()
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def watch(self, run_id: str) -> None:
        with self.lock:
            self.watched.add(run_id)

    def run(self) -> None:
        from django.db import connection

        while not self.stop.wait(self.period):
            try:
                self._sample()
            except Exception:  # noqa: BLE001 - the database may be cut off: count, go on
                self.seen.errors += 1
                with contextlib.suppress(Exception):
                    connection.close()
        connection.close()

    def _sample(self) -> None:
        from runs.models import Run

        with self.lock:
            ids = list(self.watched)
        rows = Run.objects.filter(pk__in=ids).values(
            "pk", "status", "cap_usd", "reserved_usd", "spent_answers_usd", "spent_judge_usd"
        )
        for row in rows:
            held = row["reserved_usd"] + row["spent_answers_usd"] + row["spent_judge_usd"]
            over = held - row["cap_usd"]
            if over > 0:
                worst = self.seen.over_cap.get(row["pk"], Decimal(0))
                self.seen.over_cap[row["pk"]] = max(worst, over)
            self.seen.statuses[row["pk"]] = row["status"]
        self.seen.samples += 1


def statuses(run_ids: list[str]) -> dict[str, str]:
    from runs.models import Run

    return dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "status"))


def wait_final(run_ids: list[str], timeout_s: float, *, tick=None) -> dict[str, str]:
    """Wait until every run has a final status (or the timeout); their statuses."""
    from django.db import connection

    deadline = time.monotonic() + timeout_s
    found: dict[str, str] = {}
    while time.monotonic() < deadline:
        try:
            found = statuses(run_ids)
        except Exception:  # noqa: BLE001 - a dropped connection: try again
            connection.close()
            time.sleep(1)
            continue
        if all(found.get(r) in FINAL for r in run_ids):
            return found
        if tick is not None:
            tick(found)
        time.sleep(0.5)
    return found


def soak_shape(rng: random.Random, cases: tuple[int, int]) -> tuple[SuiteShape, int, float]:
    """A judged run's shape, its concurrency and its cap factor: most caps are twice the
    estimate; one run in four is capped at exactly its estimate, so reservations press on
    the cap while calls are in flight."""
    shape = SuiteShape(cases=rng.randint(*cases), judge=True)
    concurrency = rng.choice([8, 16, 24, 32])
    factor = 1.0 if rng.random() < 0.25 else 2.0
    return shape, concurrency, factor
