"""The run engine's benchmark (SPEC §17, issue 14), in one run on this machine.

    .venv/bin/python bench/engine.py [--answers 1000] [--latency-ms 200] [--concurrency 8,64,256]
        [--pipeline-concurrency 64] [--paths worker,cli] [--parts answers,pipeline,fake,startup]
        [--memory [--memory-answers 100000]] [--startup-runs 7] [--fake-runs 5] [--skip-plain]
        [--json FILE] [--strict] [--keep-data] [--clusters 1] [--worker-processes 2] [--shards N]

What it does, start to finish (the parts and paths chosen run in this order):

1. Starts ``bench/mock_provider.py`` (an OpenAI-compatible server with a fixed latency that
   answers ``mock/judge`` with verdicts) on a free loopback port.
2. Points evalsite at a throwaway data dir (SQLite by default; ``DATABASE_URL`` and
   ``EVALSITE_REDIS_URL`` are honoured if set), applies migrations, creates an Endpoint named
   ``mock`` at the mock server and a fresh price table with ``mock/bench`` and ``mock/judge``
   rows, activated.
3. **Worker path**: starts real ``evalsite worker`` processes (``--clusters`` ×
   ``--worker-processes``, the latter passed as EVALSITE_WORKERS), warms them up with a small
   run, then for each run plans and stores it here and queues it with
   ``runs.engine.tasks.enqueue_run(run, shards=--shards)``:
   - *answers only*, at each ``--concurrency`` C: ``--answers`` answers (answers/2 cases ×
     ``mock/bench`` and ``mock/bench@alt``, one model, so C limits the whole run; every task
     ``judge: false``), timed from the run's ``started_at`` to the last answer stored (the
     pickup, enqueue to ``started_at``, is in the details);
   - *full pipeline*, at each ``--pipeline-concurrency`` C: the same with ``judge: true`` and
     ``mock/judge`` (two judge calls per pair), timed from ``started_at`` to the run's
     ``finished_at``;
   - *memory* (``--memory`` only, long): a ``--fake`` run of ``--memory-answers`` answers
     (cases × 2 contestants × 20 repeats); every worker process's VmHWM.
   Then it stops the workers, so none can take a CLI run.
4. **CLI path**: the same runs through ``evalsite run SUITE --no-cache --concurrency C
   --max-cost 1000`` (``--fake`` for memory) as a subprocess, timed from the run's
   ``started_at``; the process's wall time, CPU and ru_maxrss from wait4(). The whole
   process, spawn to exit, is also held to issue 31's targets for runs of 4,000 answers
   (``--answers 4000``): 1.15 x ideal at C = 64, 1.5 x at 256, 1.25 x for the pipeline at 64.
   For the memory run, issue 31's two targets around the fan-out, 5 s each: *planned and
   stored* (spawn to ``started_at`` or the run's ``plan_stored_at``, whichever is later: the
   rest of the plan is stored beside the first calls) and *scored and reported* (the last
   answer stored to ``finished_at``).
5. Plain fan-outs of the same request bodies at each C in this process: httpx, aiohttp and a
   raw asyncio-streams client (the floor); then aiohttp again as a script in its own
   process (``bench/fanout.py``), spawn to exit, beside the whole ``evalsite run``.
6. *fake* (CLI path): ``evalsite run SUITE --fake --no-cache`` of the answers-only suite,
   ``--fake-runs`` times after one untimed run, the median spawn to exit (issue 31: 2 s for
   4,000 answers).
7. Start-up: the median of ``--startup-runs`` runs of ``evalsite validate`` and ``evalsite
   run --fake`` on examples/support-desk.yaml, on the warm data dir.
8. Prints the tables (each target with ok / MISS) and the details; stops everything it
   started.

Every suite gets a fresh salt in its prompt, so no run is helped by another's cache rows.
On a shared database (``DATABASE_URL``) the bench's suites and runs stay there, and so do the
start-up part's fake runs of the demo suite; other workers on a shared broker may take its
queued shards (and would need to reach the mock on this machine's loopback).
Stopped early (Ctrl-C, SIGTERM, an error), it cancels its unfinished runs, stops the workers,
any ``evalsite run`` and the mock, and removes the data dir; its children also get SIGTERM if
it dies outright. The exit status is 1 when a run failed, errored or timed out, and with
``--strict`` also on any MISS.

See docs/performance.md for the targets, the figures and their analysis.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from database import (
    CONTESTANTS,
    MODEL,
    SuiteShape,
    cancel_unfinished,
    new_label,
    plan_run,
    restore_database,
    set_up_database,
    write_suite,
)
from fanout import KINDS, measure_fan_out, measure_process_fan_out, request_bodies
from machine import reference_cpu_s
from paths import EngineResult, cli_argv, in_cli, on_workers
from printout import print_report
from procs import ROOT, Processes, descendants, evalsite_command, peak_rss, start_mock, status_kb
from results import (
    ANSWER_TARGETS,
    PIPELINE_TARGET,
    FakeRuns,
    Measurement,
    MemoryResult,
    Results,
)
from startup import measure_startup

PARTS = ("answers", "pipeline", "fake", "startup", "memory")
MEMORY_REPEATS = 20


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="The run engine's benchmark.")
    add = parser.add_argument
    add("--answers", type=int, default=1000, help="answers per run (even)")
    add("--latency-ms", type=float, default=200.0)
    add("--concurrency", default="8,64,256", help="answers-only levels, comma-separated")
    add("--pipeline-concurrency", default="64", help="full-pipeline levels, comma-separated")
    add("--paths", default="worker,cli", help="worker and/or cli")
    add("--parts", default="answers,pipeline,fake,startup", help=f"any of {', '.join(PARTS)}")
    add("--memory", action="store_true", help="also the long memory run (adds 'memory')")
    add("--memory-answers", type=int, default=100_000, help="a multiple of 40")
    add("--startup-runs", type=int, default=7)
    add("--fake-runs", type=int, default=5, help="runs of the --fake part (median)")
    add("--clusters", type=int, default=1, help="`evalsite worker` processes")
    add("--worker-processes", type=int, default=2, help="EVALSITE_WORKERS for each cluster")
    add("--shards", type=int, help="shards per queued run (default: all worker processes)")
    add("--skip-plain", action="store_true", help="no plain or raw fan-outs")
    add("--json", type=Path, help="also write every figure to this file")
    add("--keep-data", action="store_true", help="keep the throwaway data dir")
    add("--strict", action="store_true", help="exit 1 on any MISS")
    args = parser.parse_args(argv)
    args.levels = _ints(parser, args.concurrency)
    args.pipeline_levels = _ints(parser, args.pipeline_concurrency)
    args.paths = _names(parser, args.paths, ("worker", "cli"))
    args.parts = _names(parser, args.parts, PARTS) | ({"memory"} if args.memory else set())
    if args.answers < 2 or args.answers % 2:
        parser.error("--answers must be an even number >= 2 (cases x 2 contestants)")
    if args.memory_answers < 40 or args.memory_answers % 40:
        parser.error("--memory-answers must be a multiple of 40 (cases x 2 x 20 repeats)")
    if min(args.clusters, args.worker_processes, args.startup_runs, args.fake_runs) < 1:
        parser.error("clusters, worker processes, start-up runs and fake runs must be >= 1")
    args.shards = args.shards or args.clusters * args.worker_processes
    return args


def _ints(parser, text: str) -> list[int]:
    values = [int(item) for item in text.split(",") if item.strip()]
    if any(value < 1 for value in values):
        parser.error("concurrency levels must be >= 1")
    return values


def _names(parser, text: str, allowed: tuple[str, ...]) -> set[str]:
    names = {item.strip() for item in text.split(",") if item.strip()}
    if names - set(allowed):
        parser.error(f"unknown {', '.join(sorted(names - set(allowed)))}; use {allowed}")
    return names


class Bench:
    """One benchmark run: its data dir, children, the mock and what was measured."""

    def __init__(self, args: argparse.Namespace, data_dir: Path, processes: Processes, mock: str):
        self.args = args
        self.data_dir = data_dir
        self.processes = processes
        self.mock = mock
        self.latency_s = args.latency_ms / 1000
        self.env = dict(os.environ)
        self.roots: list[int] = []
        self.bodies_from: dict[int, str] = {}  # C: a run whose request bodies the fan-outs send
        self.results = Results(config=_config(args))

    def say(self, text: str) -> None:
        print(text, flush=True)

    def timeout(self, shape: SuiteShape, level: int | None) -> float:
        """20 times the ideal, at least 2 minutes; 4 hours for a --fake run."""
        if level is None:
            return 4 * 3600.0
        calls = shape.answers * (2 if shape.judge else 1)
        return max(120.0, 20 * calls * self.latency_s / level)

    # --- the worker path ---------------------------------------------------------------

    def worker_path(self) -> None:
        env = self.env | {"EVALSITE_WORKERS": str(self.args.worker_processes)}
        names = [f"worker-{n}" for n in range(self.args.clusters)]
        argv = [*evalsite_command(), "worker"]
        self.roots = [self.processes.start(name, argv, env).pid for name in names]
        self.say(f"workers {self.roots}")
        try:
            self.warm_up_workers()
            self.each_part(self.on_workers)
            self.results.worker_rss_mb = dict(peak_rss(descendants(self.roots)))
        finally:
            with contextlib.suppress(Exception):
                cancel_unfinished()  # stopped early: the shards stop between calls
            self.processes.stop(names)  # before the CLI path: no worker may take its runs
            self.roots = []

    def warm_up_workers(self) -> None:
        """A small run first, so the timed runs start with booted, imported workers."""
        result = self.on_workers("warm-up", 8, SuiteShape(cases=4 * self.args.shards))
        if result.errors or result.timed_out or result.status != "done":
            logs = "\n".join(self.processes.tail(f"worker-{n}") for n in range(self.args.clusters))
            raise SystemExit(f"the warm-up run failed ({result}); worker logs:\n{logs}")
        self.say(f"warm-up: {result.answers} answers in {result.done_s:.1f}s")

    def on_workers(self, part: str, level: int | None, shape: SuiteShape) -> EngineResult:
        """Plan the run here, queue it to the workers and follow it."""
        fake = part == "memory"
        label = new_label(f"worker-{part}-c{level or 'default'}")
        planned = plan_run(write_suite(self.data_dir, shape), level, label, fake=fake)
        return on_workers(
            planned,
            shards=self.args.shards,
            worker_roots=self.roots,
            mock=None if fake else self.mock,
            timeout_s=self.timeout(shape, level),
        )

    # --- the CLI path ------------------------------------------------------------------

    def cli_path(self) -> None:
        warm = self.in_cli("warm-up", 8, SuiteShape(cases=8))
        if warm.status != "done" or warm.errors:
            raise SystemExit(f"the evalsite run warm-up failed: {warm}")
        self.say(f"evalsite run warm-up: {warm.answers} answers in {warm.process_wall_s:.1f}s")
        self.each_part(self.in_cli)

    def in_cli(self, part: str, level: int | None, shape: SuiteShape) -> EngineResult:
        """`evalsite run` on the suite, in its own process; nothing is queued."""
        fake = part == "memory"
        label = new_label(f"cli-{part}-c{level or 'default'}")
        argv = cli_argv(write_suite(self.data_dir, shape), label, level, fake=fake)
        timeout = 60 + self.timeout(shape, level)  # plus the command's start-up and planning
        mock = None if fake else self.mock
        return in_cli(self.processes, argv, label, self.env, mock=mock, timeout_s=timeout)

    # --- the parts, on either path: `run(part, C, shape)` gives an EngineResult --------
    # The memory run is --fake, at the default concurrency (C is None).

    def each_part(self, run) -> None:
        parts = self.args.parts
        if "answers" in parts:
            self.answers(run)
        if "pipeline" in parts:
            self.pipeline(run)
        if "memory" in parts:
            self.memory(run)

    def answers(self, run) -> None:
        shape = SuiteShape(cases=self.args.answers // 2)
        for level in self.args.levels:
            engine = run("answers", level, shape)
            if engine.run_id:
                self.bodies_from.setdefault(level, engine.run_id)
            target = ANSWER_TARGETS.get(level)
            self.note(Measurement("answers", level, self.latency_s, engine, target))
            time.sleep(1.0)  # let every shard leave its loop before the next run

    def pipeline(self, run) -> None:
        shape = SuiteShape(cases=self.args.answers // 2, judge=True)
        for level in self.args.pipeline_levels:
            engine = run("pipeline", level, shape)
            self.note(Measurement("pipeline", level, self.latency_s, engine, PIPELINE_TARGET))
            time.sleep(1.0)

    def memory(self, run) -> None:
        cases = self.args.memory_answers // (len(CONTESTANTS) * MEMORY_REPEATS)
        engine = run("memory", None, SuiteShape(cases=cases, repeats=MEMORY_REPEATS))
        # On the worker path this process planned and stored the run, as the web page would.
        planner = status_kb(os.getpid(), "VmHWM") / 1024 if engine.path == "worker" else None
        measured = MemoryResult(engine.path, engine, planner)
        self.results.memory.append(measured)
        sizes = ", ".join(f"{name} {mb:.0f} MB" for name, mb in measured.processes.items())
        self.say(f"memory, {engine.path}: {engine.answers} answers, {engine.status}; {sizes}")

    def note(self, m: Measurement) -> None:
        (self.results.answers if m.part == "answers" else self.results.pipeline).append(m)
        e = m.engine
        wall = "-" if m.wall_s is None else f"{m.wall_s:.2f}s"
        ratio = "-" if m.ratio is None else f"{m.ratio:.2f}"
        self.say(
            f"{m.part}, {e.path}, C={m.concurrency}: {wall} ({ratio} x ideal) {m.verdict}; "
            f"{e.status}, {e.answers} answers, {e.judge_calls} judge calls, {e.errors} errors"
        )

    # --- without the engine ------------------------------------------------------------

    def fan_outs(self) -> None:
        for level, run_id in self.bodies_from.items():
            url, bodies = request_bodies(run_id, MODEL)
            found = {kind: measure_fan_out(kind, url, bodies, level, self.mock) for kind in KINDS}
            self.results.fan_outs[level] = found
            ideal = len(bodies) * self.latency_s / level
            walls = [
                f"{kind} {r.wall_s:.2f}s ({r.wall_s / ideal:.2f} x)" for kind, r in found.items()
            ]
            self.say(f"fan-outs, C={level}: {', '.join(walls)}")
            whole = measure_process_fan_out(
                self.processes, "aiohttp", url, bodies, level, self.data_dir
            )
            self.results.process_fan_outs[level] = whole
            self.say(
                f"plain aiohttp as a process, C={level}: {whole.process_wall_s:.2f}s "
                f"({whole.process_wall_s / ideal:.2f} x), {whole.errors} errors"
            )

    def fake_runs(self) -> None:
        """`evalsite run --fake` of the answers-only suite: the engine with an instant
        provider, spawn to exit (issue 31: at most 2 s for 4,000 answers)."""
        fake = FakeRuns(answers=self.args.answers)
        self.results.fake = fake
        shape = SuiteShape(cases=self.args.answers // 2)
        for n in range(self.args.fake_runs + 1):  # the first, untimed, warms the data dir
            label = new_label("cli-fake")
            argv = cli_argv(write_suite(self.data_dir, shape), label, None, fake=True)
            engine = in_cli(self.processes, argv, label, self.env, mock=None, timeout_s=600)
            if engine.returncode or engine.status != "done" or engine.errors:
                fake.failures.append(f"{engine.status or 'no run'}: {'; '.join(engine.notes)}")
            elif n and engine.process_wall_s is not None:
                fake.walls_s.append(engine.process_wall_s)
                fake.cpus_s.append(engine.cpu_process_s or 0.0)
                fake.max_rss_mb = max(fake.max_rss_mb, *engine.peak_rss_mb.values())
        median = "-" if fake.median_s is None else f"{fake.median_s:.2f}s"
        self.say(f"run --fake of {fake.answers} answers: median {median} {fake.verdict}")

    def startup(self) -> None:
        self.results.startup = measure_startup(self.processes, self.env, self.args.startup_runs)
        for s in self.results.startup:
            self.say(f"start-up: {s.command}: median {s.median_s:.2f}s of {len(s.walls_s)}")


def _config(args) -> dict:
    from django.conf import settings

    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "latency_ms": args.latency_ms,
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "broker": "redis" if settings.REDIS_URL else "orm",
        "paths": sorted(args.paths),
        "clusters": args.clusters,
        "worker_processes": args.worker_processes,
        "shards": args.shards,
        "answers": args.answers,
        "commit": _commit(),
        "load_average": os.getloadavg()[0],
        "reference_cpu_s": reference_cpu_s(),
    }


def _commit() -> str:
    """The commit, with ``+changes`` when the engine's files differ from it."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--", "runs", "evalsite"], capture_output=True, text=True
    )
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def run_bench(args, data_dir: Path, processes: Processes) -> Results:
    mock = start_mock(processes, args.latency_ms, max_seconds=6 * 3600)
    import django

    django.setup()
    bench = Bench(args, data_dir, processes, mock)
    restore = None
    try:
        restore = set_up_database(mock)
        print(f"data dir {data_dir}; mock at {mock}", flush=True)
        engine_parts = args.parts & {"answers", "pipeline", "memory"}
        if "worker" in args.paths and engine_parts:
            bench.worker_path()
        if "cli" in args.paths and engine_parts:
            bench.cli_path()
        if not args.skip_plain and "answers" in args.parts:
            bench.fan_outs()
        if "cli" in args.paths and "fake" in args.parts:
            bench.fake_runs()
        if "startup" in args.parts:
            bench.startup()
    finally:
        with contextlib.suppress(Exception):
            cancel_unfinished()
        processes.stop_all()
        if restore is not None:
            with contextlib.suppress(Exception):
                restore_database(restore)
    return bench.results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data_dir = Path(tempfile.mkdtemp(prefix="evalsite-bench-"))
    os.environ["EVALSITE_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    sys.path.insert(0, str(ROOT))
    processes = Processes(data_dir)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        results = run_bench(args, data_dir, processes)
        results.config["load_average_end"] = os.getloadavg()[0]
        print_report(results)
        if args.json:
            args.json.write_text(json.dumps(results.as_json(), indent=2) + "\n", "utf-8")
        verdicts = results.verdicts().values()
        return 1 if "FAIL" in verdicts or (args.strict and "MISS" in verdicts) else 0
    except KeyboardInterrupt:
        print("interrupted: everything this benchmark started is stopped", file=sys.stderr)
        return 130
    finally:
        processes.stop_all()
        if not args.keep_data:
            with contextlib.suppress(Exception):
                from django.db import connections

                connections.close_all()
            shutil.rmtree(data_dir, ignore_errors=True)
        else:
            print(f"kept {data_dir}")


if __name__ == "__main__":
    sys.exit(main())
