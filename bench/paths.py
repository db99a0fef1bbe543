"""The two ways a user's run reaches the engine, each measured from the database.

- **worker**: the bench plans and stores the run in this process (as the web page does),
  queues it with ``runs.engine.tasks.enqueue_run(run, shards=…)`` and real ``evalsite worker``
  processes execute it. Times are from the run's ``started_at``, as SPEC §17 measures
  ("from run started"); the queue's pickup (enqueue to ``started_at``) is given on its own.
- **cli**: ``evalsite run SUITE --no-cache --concurrency C --max-cost 1000 --label L`` as a
  subprocess with this process's environment (``EVALSITE_DATA_DIR``, and ``DATABASE_URL`` /
  ``EVALSITE_REDIS_URL`` when set). The command plans, stores and runs the run's one shard on
  a thread of its own process (``runs.engine.runner.execute``); nothing is queued. Times are from
  the run's ``started_at`` (the moment its shard marked it running). The caller stops the
  workers first, and :attr:`EngineResult.resumed` says whether a worker was ever asked to
  resume the run (``Run.resumed_at``, stamped by ``resume_stalled_runs``).

Both end the answer phase at the last answer stored (``max(Answer.finished_at)``) and the
run at its ``finished_at``, so polling never blurs a figure. While a run goes, this process
only polls the run's status every 50 ms and samples the engine processes' CPU from /proc.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from database import MADE, Planned
from fanout import mock_stats
from procs import (
    Exited,
    Processes,
    Waiter,
    cpu_by_pid,
    descendants,
    evalsite_command,
    peak_rss,
    rss_kb,
)

POLL_S = 0.05
ANSWERING = ("queued", "running")
ACTIVE = ("queued", "running", "judging", "reporting")


@dataclass
class EngineResult:
    path: str  # worker / cli
    status: str = ""
    run_id: str = ""
    answers: int = 0
    judge_calls: int = 0
    errors: int = 0  # answers and judge calls not done
    timed_out: bool = False
    mock_requests: int = 0
    peak_in_flight: int = 0  # the most calls the mock saw at once
    peak_judge_in_flight: int = 0  # the most judge calls
    start_s: float = 0.0  # the zero the times below count from (epoch seconds)
    pickup_s: float | None = None  # worker: enqueue -> started_at
    answers_s: float | None = None  # -> max(Answer.finished_at)
    judge_first_s: float | None = None  # -> min(Judgement.finished_at)
    judge_last_s: float | None = None  # -> max(Judgement.finished_at)
    done_s: float | None = None  # -> Run.finished_at
    cpu_answers_s: float = 0.0  # engine processes, during the answer phase
    cpu_run_s: float = 0.0  # engine processes, from the run's start to its end
    cpu_process_s: float | None = None  # cli: the whole process (wait4)
    cpu_by_process: dict[str, float] = field(default_factory=dict)  # worker: in the run
    peak_rss_mb: dict[str, float] = field(default_factory=dict)  # VmHWM by process
    sampled_rss_mb: dict[str, float] = field(default_factory=dict)  # largest by phase, polled
    plan_s: float | None = None  # planning (worker: in this process)
    store_s: float | None = None  # storing the run and its answers
    process_wall_s: float | None = None  # cli: spawn to exit
    returncode: int | None = None
    resumed: bool = False  # a worker was asked to resume the run
    notes: list[str] = field(default_factory=list)


@dataclass
class _Samples:
    """CPU seconds by pid at the phase boundaries a poll saw first, and the largest RSS a
    poll saw in each phase (VmHWM keeps only the lifetime peak)."""

    running: dict[int, float] | None = None
    answered: dict[int, float] | None = None
    last: dict[int, float] = field(default_factory=dict)
    rss_kb: dict[str, int] = field(default_factory=dict)  # phase: largest RSS of one process

    def see_rss(self, pids: list[int], status: str | None) -> None:
        if status in (None, "queued"):
            phase = "planning and storing"  # the CLI's; workers are idle then
        else:
            phase = "answering" if status == "running" else "after the answers"
        largest = max((rss_kb(pid) for pid in pids), default=0)
        self.rss_kb[phase] = max(self.rss_kb.get(phase, 0), largest)


def _poll(run_id, pids: list[int], samples: _Samples) -> str | None:
    from runs.models import Run

    status = Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
    samples.last = cpu_by_pid(pids) or samples.last
    samples.see_rss(pids, status)
    if status not in (None, "queued") and samples.running is None:
        samples.running = samples.last
    if status is not None and status not in ANSWERING and samples.answered is None:
        samples.answered = samples.last
    return status


def _cpu(after: dict[int, float] | None, before: dict[int, float] | None) -> dict[int, float]:
    after, before = after or {}, before or {}
    return {pid: after[pid] - before.get(pid, 0.0) for pid in after}


def _read_run(result: EngineResult, run_id: str, mock: str | None) -> None:
    """The run's figures from the database (and the mock's counters), into `result`."""
    from django.db.models import Count, Max, Min, Q

    from runs.models import Answer, Judgement, Run

    run = Run.objects.get(pk=run_id)
    done = Q(status="done")
    answers = Answer.objects.filter(run=run).aggregate(
        n=Count("pk"), done=Count("pk", filter=done), last=Max("finished_at")
    )
    judged = Judgement.objects.filter(run=run).aggregate(
        n=Count("pk"),
        done=Count("pk", filter=done),
        first=Min("finished_at"),
        last=Max("finished_at"),
    )
    result.run_id, result.status = run.id, run.status
    result.answers, result.judge_calls = answers["n"], judged["n"]
    result.errors = answers["n"] - answers["done"] + judged["n"] - judged["done"]
    result.resumed = run.resumed_at is not None
    if run.started_at and result.path == "worker":
        result.pickup_s = run.started_at.timestamp() - result.start_s
        result.start_s = run.started_at.timestamp()  # SPEC §17: from "run started"
    zero = result.start_s
    if answers["last"]:
        result.answers_s = answers["last"].timestamp() - zero
    if judged["first"]:
        result.judge_first_s = judged["first"].timestamp() - zero
        result.judge_last_s = judged["last"].timestamp() - zero
    if run.finished_at:
        result.done_s = run.finished_at.timestamp() - zero
    if mock:
        stats = mock_stats(mock)
        result.mock_requests, result.peak_in_flight = stats["requests"], stats["max_in_flight"]
        result.peak_judge_in_flight = stats["max_judge_in_flight"]


def _started_at(run_id: str) -> float | None:
    from runs.models import Run

    started = Run.objects.filter(pk=run_id).values_list("started_at", flat=True).first()
    return started.timestamp() if started else None


# --- worker -------------------------------------------------------------------------------


def on_workers(
    planned: Planned, *, shards: int, worker_roots: list[int], mock: str | None, timeout_s: float
) -> EngineResult:
    """Queue a run this process planned and follow it until it is finished."""
    from runs.engine.tasks import enqueue_run

    run = planned.run
    result = EngineResult("worker", plan_s=planned.plan_s, store_s=planned.store_s)
    pids = descendants(worker_roots)
    if mock:
        mock_stats(mock, reset=True)
    samples = _Samples(running=cpu_by_pid(pids))
    result.start_s = time.time()
    enqueue_run(run, shards=shards)  # not in a transaction: sent at once
    deadline = result.start_s + timeout_s
    while _poll(run.id, pids, samples) in ACTIVE:
        if time.time() > deadline:
            if result.timed_out:
                break
            deadline = _time_out(result, run.id, timeout_s)
        time.sleep(POLL_S)
    samples.last = cpu_by_pid(pids) or samples.last
    _read_run(result, run.id, mock)
    _set_cpu(result, samples)
    result.peak_rss_mb = dict(peak_rss(descendants(worker_roots)))
    return result


def _time_out(result: EngineResult, run_id: str, timeout_s: float) -> float:
    """Cancel the run; the new deadline: a minute for its shards to stop between calls."""
    from runs.models import Run

    result.timed_out = True
    result.notes.append(f"timed out after {timeout_s:.0f}s and was cancelled")
    Run.objects.filter(pk=run_id, status__in=ACTIVE).update(cancel_requested=True)
    return time.time() + 60


def _set_cpu(result: EngineResult, samples: _Samples) -> None:
    """CPU of the engine processes from the enqueue (worker) or the first poll that saw
    the run past queued (cli): to the first poll past running, and to the last poll."""
    if samples.answered is samples.running:
        result.notes.append("the answer phase was too short to sample its CPU on its own")
    result.sampled_rss_mb = {phase: kb / 1024 for phase, kb in samples.rss_kb.items()}
    answering = _cpu(samples.answered or samples.last, samples.running)
    run = _cpu(samples.last, samples.running)
    result.cpu_answers_s = sum(answering.values())
    result.cpu_run_s = sum(run.values())
    if result.path == "worker":
        result.cpu_by_process = {str(pid): round(cpu, 2) for pid, cpu in run.items()}


# --- cli ----------------------------------------------------------------------------------


def cli_argv(suite_path, label: str, concurrency: int | None, *, fake: bool) -> list[str]:
    argv = [*evalsite_command(), "run", str(suite_path), "--no-cache", "--max-cost", "1000"]
    argv += ["--label", label]
    if concurrency:
        argv += ["--concurrency", str(concurrency)]
    if fake:
        argv.append("--fake")
    return argv


def in_cli(
    processes: Processes, argv: list[str], label: str, env: dict, *, mock, timeout_s: float
) -> EngineResult:
    """Run `evalsite run …` and follow the run it makes (found by its label)."""
    result = EngineResult("cli")
    if mock:
        mock_stats(mock, reset=True)
    spawned = time.time()
    waiter = Waiter(processes, processes.start(label, argv, env), spawned)
    pid = waiter.process.pid
    samples, run_id, deadline = _Samples(), None, spawned + timeout_s
    while waiter.alive():
        run_id = run_id or _run_with_label(label)
        if run_id:
            _poll(run_id, [pid], samples)
        else:
            samples.last = cpu_by_pid([pid]) or samples.last
            samples.see_rss([pid], None)
        if time.time() > deadline:
            if result.timed_out or run_id is None:
                processes.stop([label])
                break
            deadline = _time_out(result, run_id, timeout_s)
        time.sleep(POLL_S)
    _exited(result, waiter.wait(30), processes.tail(label, 5))
    run_id = run_id or _run_with_label(label)
    if run_id is None:
        result.notes.append("the command stored no run")
        return result
    MADE.run_ids.append(run_id)
    result.start_s = _started_at(run_id) or spawned
    _read_run(result, run_id, mock)
    _set_cpu(result, samples)
    _planning_times(result, run_id, spawned)
    return result


def _exited(result: EngineResult, exited: Exited | None, log_tail: str) -> None:
    if exited is None:
        result.notes.append("evalsite run did not exit")
        return
    result.returncode = exited.returncode
    result.process_wall_s = exited.wall_s
    result.cpu_process_s = exited.cpu_s
    result.peak_rss_mb = {"evalsite run": exited.max_rss_mb}
    if exited.returncode != 0:
        result.notes.append(f"evalsite run exited {exited.returncode}: {log_tail}")


def _planning_times(result: EngineResult, run_id: str, spawned: float) -> None:
    """From the spawn to the Run row (start-up, the suite loaded, make_plan), then to the
    shard marking it running or its last answer row stored, whichever is later: `evalsite
    run` stores the rest of its plan beside its first calls (start_plan), and its plan is
    stored only once that is done."""
    from runs.models import Run

    created, stored = (
        Run.objects.filter(pk=run_id).values_list("created_at", "plan_stored_at").get()
    )
    result.plan_s = created.timestamp() - spawned
    whole = stored.timestamp() if stored is not None else result.start_s
    result.store_s = max(result.start_s, whole) - created.timestamp()


def _run_with_label(label: str) -> str | None:
    from runs.models import Run

    return Run.objects.filter(label=label).values_list("pk", flat=True).first()
