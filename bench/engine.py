"""The run engine's throughput benchmark (SPEC §17), in one run on this machine.

    .venv/bin/python bench/engine.py [--answers 1000] [--latency-ms 200] [--concurrency 8,64,256]

What it does, start to finish:

1. Starts ``bench/mock_provider.py`` (an OpenAI-compatible server with a fixed latency) on a
   free loopback port.
2. Points evalsite at a throwaway data dir (SQLite by default; ``DATABASE_URL`` and
   ``EVALSITE_REDIS_URL`` are honoured if set), applies migrations, creates an Endpoint named
   ``mock`` at the mock server and a fresh price table with a ``mock/bench`` row, activated.
3. Starts real ``evalsite worker`` processes (``--clusters`` × ``--worker-processes``, the
   latter passed as EVALSITE_WORKERS) and warms them up with a small run.
4. For each concurrency C: generates a suite of answers/2 cases × 2 contestants
   (``mock/bench`` and ``mock/bench@alt``; both are the one model ``mock/bench``, so C is the
   whole run's limit), every task ``judge: false``; plans and stores it with --no-cache
   semantics; enqueues it through the real queue (``runs.tasks.enqueue_run`` with
   ``--shards`` shards) and measures from the enqueue to the last answer stored
   (``max(Answer.finished_at)``). Then, in this process, sends the same requests with a plain
   asyncio + httpx fan-out at concurrency C, and with a raw asyncio-streams client (the
   floor: what the mock and this machine allow without any HTTP library).
5. Prints the table, the details and the workers' peak RSS; stops everything it started.

Every suite gets a fresh salt in its prompt, so each run writes its own cache rows and no run
is helped by an earlier one. Nothing is committed anywhere but the throwaway data dir (or, on
a shared database, the bench's own suite, runs, endpoint and price table; the previously
active price table and any existing ``mock`` endpoint are restored at the end). Stopped early
(Ctrl-C, SIGTERM, an error), it cancels its unfinished runs, stops the workers and the mock,
and removes the data dir; its children also get SIGTERM if it dies outright.

See docs/performance.md for the targets, the figures and their analysis.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import resource
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MOCK = Path(__file__).resolve().parent / "mock_provider.py"
TARGETS = {8: 1.05, 64: 1.15, 256: 1.5}  # SPEC §17, wall ÷ ideal
ENDPOINT = "mock"
MODEL = "mock/bench"
CONTESTANTS = (MODEL, f"{MODEL}@alt")
POLL_S = 0.02
PLANNED: list[str] = []  # run ids this script created, cancelled if it stops early
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


# --- processes this script starts (and always stops) ----------------------------------------


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if this script dies (Linux prctl), so a crash
    never leaves a worker behind."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Processes:
    """Child processes, each the leader of its own process group: stopped with SIGTERM to the
    leader, then SIGKILL to whatever is left of its group."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.started: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, argv: list[str], env: dict, *, stdout=None) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the child
        process = subprocess.Popen(
            argv,
            env=env,
            cwd=ROOT,
            stdout=stdout if stdout is not None else log,
            stderr=log,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        self.started.append((name, process))
        return process

    def stop_all(self, grace_s: float = 10.0) -> None:
        # SIGTERM to each leader only: a django-q2 cluster whose whole group gets SIGTERM
        # hangs in "stopping" forever (its sentinel dies first); given to the leader alone,
        # it stops its own children and exits in about a second.
        for _, process in self.started:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for _, process in self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(0.1, deadline - time.monotonic()))
        for _, process in self.started:
            # The group too: a cluster's forked workers outlive a killed parent otherwise.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)
        self.started.clear()

    def tail(self, name: str, lines: int = 20) -> str:
        path = self.log_dir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])


def start_mock(processes: Processes, latency_ms: float, max_seconds: float) -> str:
    argv = [sys.executable, str(MOCK), "--port", "0", "--latency-ms", str(latency_ms)]
    argv += ["--max-seconds", str(max_seconds)]
    process = processes.start("mock", argv, dict(os.environ), stdout=subprocess.PIPE)
    ready, _, _ = select.select([process.stdout], [], [], 15)
    line = process.stdout.readline().decode().strip() if ready else ""
    if not line.startswith("listening on "):
        raise SystemExit(f"the mock provider did not start: {line!r}\n{processes.tail('mock')}")
    return line.removeprefix("listening on ")


def evalsite_command() -> list[str]:
    script = Path(sys.executable).with_name("evalsite")
    return [str(script)] if script.exists() else [sys.executable, "-m", "evalsite"]


# --- /proc: process trees, RSS and CPU -----------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from 3 (state) on


def descendants(roots: list[int]) -> list[int]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields:
                children[int(fields[1])].append(int(entry))
    found, stack = [], list(roots)
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kb(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_KB
    except (OSError, IndexError, ValueError):
        return 0


def cpu_by_pid(pids: list[int]) -> dict[int, float]:
    """CPU seconds (user + system) each process has used so far."""
    out = {}
    for pid in pids:
        fields = _stat_fields(pid)
        if fields:
            out[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    return out


# --- the mock's counters ----------------------------------------------------------------


def mock_stats(base: str, *, reset: bool = False) -> dict:
    import httpx

    if reset:
        return httpx.post(f"{base}/stats/reset", timeout=10).json()
    return httpx.get(f"{base}/stats", timeout=10).json()


# --- database set-up ------------------------------------------------------------------------


@dataclass
class Restore:
    table_id: int | None = None
    endpoint: dict | None = None


def set_up_database(base_url: str) -> Restore:
    from runs.models import Endpoint, Price, PriceTable
    from runs.setup import prepare_database

    prepare_database()
    restore = Restore()
    restore.endpoint = Endpoint.objects.filter(name=ENDPOINT).values("base_url").first()
    Endpoint.objects.update_or_create(
        name=ENDPOINT,
        defaults={"base_url": f"{base_url}/v1", "key_env_var": "", "notes": "bench/engine.py"},
    )
    previous = PriceTable.objects.active()
    restore.table_id = previous.pk if previous else None
    today = dt.date.today()
    table = PriceTable.objects.create(
        name=PriceTable.unused_name(f"bench-{today.isoformat()}"),
        pinned=today,
        notes="Created by bench/engine.py: the active table's rows plus mock/bench.",
    )
    rows = [p.to_row() for p in previous.prices.all()] if previous else []
    prices = [Price.from_row(table, row) for row in rows if row.model != MODEL]
    prices.append(
        Price(table=table, model=MODEL, input_per_mtok=Decimal("0.10"), output_per_mtok=1)
    )
    Price.objects.bulk_create(prices)
    table.mark_active()
    return restore


def restore_database(restore: Restore) -> None:
    from runs.models import Endpoint, PriceTable

    if restore.table_id is not None:
        PriceTable.objects.get(pk=restore.table_id).mark_active()
    if restore.endpoint is not None:
        Endpoint.objects.filter(name=ENDPOINT).update(**restore.endpoint)


def write_suite(folder: Path, salt: str, cases: int) -> Path:
    """A generated suite: `cases` cases × 2 contestants, one task, no judge."""
    lines = [
        "suite: bench",
        "version: 1",
        "description: Generated by bench/engine.py for the throughput benchmark.",
        "defaults: {temperature: 0, max_tokens: 16, timeout_s: 60}",
        f"models: [{', '.join(CONTESTANTS)}]",
        "variants:",
        '  alt: {system: "Answer in one word."}',
        "tasks:",
        "  - id: echo",
        "    judge: false",
        f'    prompt: "Benchmark {salt}, case {{{{n}}}}: reply with one word."',
        "    cases:",
    ]
    lines += [f"      - {{id: c{n:05d}, vars: {{n: {n}}}}}" for n in range(1, cases + 1)]
    path = folder / f"bench-{salt}.yaml"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def plan_run(folder: Path, cases: int, concurrency: int, label: str):
    from evalsite.core.suites import load_suite
    from runs.models import Run, SuiteVersion
    from runs.planner import RunOptions, make_plan, store_plan

    path = write_suite(folder, secrets.token_hex(4), cases)
    loaded = load_suite(path)
    version, _ = SuiteVersion.objects.register(
        loaded, path.read_text("utf-8"), origin=SuiteVersion.Origin.PATH, source_path=str(path)
    )
    options = RunOptions(
        no_cache=True, concurrency=concurrency, max_cost=Decimal("1000"), label=label
    )
    run = store_plan(make_plan(version, loaded, options))
    PLANNED.append(run.id)
    if run.status != Run.Status.QUEUED:
        raise SystemExit(f"the bench run was not queued: {run.status}: {run.detail}")
    return run


# --- measuring the engine -----------------------------------------------------------------


@dataclass
class EngineResult:
    answers: int
    wall_s: float
    done_s: float | None
    pickup_s: float | None
    errors: int
    timed_out: bool
    peak_in_flight: int
    cpu_s: float
    cpu_by_process: dict[str, float]
    peak_rss_mb: float
    status: str


def measure_engine(run, *, shards: int, worker_roots: list[int], mock: str, timeout_s: float):
    from django.db.models import Max

    from runs.models import Answer, Run
    from runs.tasks import enqueue_run

    total = Answer.objects.filter(run=run).count()
    pids = descendants(worker_roots)
    mock_stats(mock, reset=True)
    cpu_before = cpu_by_pid(pids)
    peak_rss = 0
    t0 = time.time()
    enqueue_run(run, shards=shards)  # not in a transaction: sent at once
    timed_out = False
    while True:
        finished = Answer.objects.filter(run_id=run.id, status__in=Answer.FINISHED).count()
        peak_rss = max([peak_rss, *(rss_kb(pid) for pid in pids)])
        if finished >= total:
            break
        status = Run.objects.filter(pk=run.id).values_list("status", flat=True).get()
        if status not in Run.ACTIVE:
            break
        if time.time() - t0 > timeout_s:
            timed_out = True
            Run.objects.get(pk=run.id).request_cancel()
            break
        time.sleep(POLL_S)
    cpu_after = cpu_by_pid(pids)  # before the run's own end (scoring) adds to it
    last = Answer.objects.filter(run=run).aggregate(last=Max("finished_at"))["last"]
    wall = (last.timestamp() - t0) if last else time.time() - t0
    deadline = time.time() + 30
    while Run.objects.filter(pk=run.id, status__in=Run.ACTIVE).exists() and time.time() < deadline:
        time.sleep(0.05)
    run.refresh_from_db()
    stats = mock_stats(mock)
    cpu = {pid: cpu_after[pid] - cpu_before.get(pid, 0.0) for pid in cpu_after}
    return EngineResult(
        answers=total,
        wall_s=wall,
        done_s=run.finished_at.timestamp() - t0 if run.finished_at else None,
        pickup_s=run.started_at.timestamp() - t0 if run.started_at else None,
        errors=Answer.objects.filter(run=run).exclude(status=Answer.Status.DONE).count(),
        timed_out=timed_out,
        peak_in_flight=stats["max_in_flight"],
        cpu_s=sum(cpu.values()),
        cpu_by_process={str(pid): round(value, 2) for pid, value in cpu.items()},
        peak_rss_mb=peak_rss / 1024,
        status=run.status,
    )


# --- the same requests without the engine --------------------------------------------------


def request_bodies(run) -> tuple[str, list[dict]]:
    """The URL and JSON bodies the engine sent for `run`, built by the same adapter."""
    from evalsite.core.providers import Request, build_provider
    from runs.models import Answer
    from runs.planner import endpoint_configs

    provider = build_provider(MODEL, env=os.environ, endpoints=endpoint_configs())
    bodies, url = [], ""
    for stored in Answer.objects.filter(run=run).values_list("request", flat=True):
        request = provider.prepare(Request(**stored))
        url = provider.url(request)
        bodies.append(provider.body(request))
    return url, bodies


@dataclass
class FanOutResult:
    wall_s: float
    errors: int
    cpu_ms_per_request: float
    peak_in_flight: int


async def _plain(url: str, bodies: list[dict], concurrency: int) -> tuple[float, int]:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    slots = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def one(body: dict) -> None:
            async with slots:
                response = await client.post(url, json=body)
                response.raise_for_status()
                response.json()

        started = time.perf_counter()
        results = await asyncio.gather(*(one(b) for b in bodies), return_exceptions=True)
        return time.perf_counter() - started, sum(isinstance(r, Exception) for r in results)


async def _raw(url: str, bodies: list[dict], concurrency: int) -> tuple[float, int]:
    """`concurrency` keep-alive connections written by hand: no HTTP library at all."""
    host_port = url.split("//", 1)[1].split("/", 1)
    host, port = host_port[0].rsplit(":", 1)
    path = "/" + host_port[1]
    queue = iter(bodies)
    errors = 0

    async def connection() -> None:
        nonlocal errors
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for body in queue:
                data = json.dumps(body).encode()
                head = (
                    f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
                )
                writer.write(head.encode() + data)
                reply = await reader.readuntil(b"\r\n\r\n")
                lines = reply.decode("latin-1").split("\r\n")
                length = next(
                    int(line.split(":", 1)[1])
                    for line in lines
                    if line.lower().startswith("content-length:")
                )
                json.loads(await reader.readexactly(length))
                errors += " 200 " not in lines[0] + " "
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(min(concurrency, len(bodies)))))
    return time.perf_counter() - started, errors


def measure_fan_out(kind: str, url: str, bodies: list[dict], concurrency: int, mock: str):
    mock_stats(mock, reset=True)
    before = resource.getrusage(resource.RUSAGE_SELF)
    runner = _plain if kind == "plain" else _raw
    wall, errors = asyncio.run(runner(url, bodies, concurrency))
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stats = mock_stats(mock)
    return FanOutResult(wall, errors, cpu / len(bodies) * 1000, stats["max_in_flight"])


# --- the report ------------------------------------------------------------------------------


@dataclass
class Row:
    concurrency: int
    ideal_s: float
    engine: EngineResult
    plain: FanOutResult | None = None
    raw: FanOutResult | None = None
    plan_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def _ratio(value: float | None, ideal: float) -> str:
    return "-" if value is None else f"{value / ideal:.2f}"


def print_report(rows: list[Row], config: dict, rss: dict) -> None:
    out = print
    out()
    out(
        f"evalsite engine benchmark - {config['date']} - {config['cpus']} CPUs - "
        f"latency {config['latency_ms']:g} ms - {config['database']} / {config['broker']} - "
        f"{config['clusters']} cluster(s) x {config['worker_processes']} worker processes, "
        f"{config['shards']} shards"
    )
    out()
    out("|    C | answers | wall s | ideal s | engine ratio | target | plain s | plain ratio |")
    out("|-----:|--------:|-------:|--------:|-------------:|-------:|--------:|------------:|")
    for row in rows:
        e, target = row.engine, TARGETS.get(row.concurrency)
        ratio = e.wall_s / row.ideal_s
        verdict = "" if target is None else (" ok" if ratio <= target else " MISS")
        plain_s = f"{row.plain.wall_s:.2f}" if row.plain else "-"
        out(
            f"| {row.concurrency:4d} | {e.answers:7d} | {e.wall_s:6.2f} | {row.ideal_s:7.2f} | "
            f"{ratio:8.2f}{verdict:<5}| {'-' if target is None else f'{target:.2f}':>6} | "
            f"{plain_s:>7} | {_ratio(row.plain.wall_s if row.plain else None, row.ideal_s):>11} |"
        )
    out()
    out("Details (ratios are wall / ideal; in-flight is the most calls the mock saw at once):")
    out(
        "|    C | pickup s | run done s | engine in-flight | worker CPU ms/answer | "
        "errors | raw ratio | raw in-flight | plain in-flight | plain CPU ms/req |"
    )
    out(
        "|-----:|---------:|-----------:|-----------------:|---------------------:|"
        "-------:|----------:|--------------:|----------------:|-----------------:|"
    )
    for row in rows:
        e = row.engine
        raw_ratio = _ratio(row.raw.wall_s if row.raw else None, row.ideal_s)
        out(
            f"| {row.concurrency:4d} | {_fmt(e.pickup_s):>8} | {_fmt(e.done_s):>10} | "
            f"{e.peak_in_flight:16d} | {e.cpu_s / e.answers * 1000:20.2f} | "
            f"{e.errors + (row.plain.errors if row.plain else 0):6d} | {raw_ratio:>9} | "
            f"{row.raw.peak_in_flight if row.raw else 0:13d} | "
            f"{row.plain.peak_in_flight if row.plain else 0:15d} | "
            f"{row.plain.cpu_ms_per_request if row.plain else 0:16.2f} |"
        )
    out()
    out(
        "Worker peak RSS (VmHWM, whole run): "
        + ", ".join(f"{name} {mb:.0f} MB" for name, mb in rss["processes"])
        + f"; largest {rss['largest_mb']:.0f} MB, cluster total {rss['total_mb']:.0f} MB"
    )
    for row in rows:
        busy = sorted(row.engine.cpu_by_process.values(), reverse=True)
        out(
            f"Worker CPU at C={row.concurrency}: "
            + ", ".join(f"{value:.1f}" for value in busy)
            + f" s by process (wall {row.engine.wall_s:.1f} s)"
        )
    for row in rows:
        for note in row.notes:
            out(f"note (C={row.concurrency}): {note}")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def worker_rss(worker_roots: list[int]) -> dict:
    processes = []
    for pid in descendants(worker_roots):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        processes.append((f"{name}[{pid}]", status_kb(pid, "VmHWM") / 1024))
    sizes = [mb for _, mb in processes]
    return {
        "processes": processes,
        "largest_mb": max(sizes, default=0),
        "total_mb": sum(sizes),
    }


# --- main ------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="The run engine's throughput benchmark.")
    parser.add_argument("--answers", type=int, default=1000, help="answers per run (even)")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", default="8,64,256", help="comma-separated list")
    parser.add_argument("--clusters", type=int, default=1, help="`evalsite worker` processes")
    parser.add_argument(
        "--worker-processes", type=int, default=2, help="EVALSITE_WORKERS for each cluster"
    )
    parser.add_argument("--shards", type=int, help="shards per run (default: all workers)")
    parser.add_argument("--skip-plain", action="store_true", help="engine only")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--keep-data", action="store_true", help="keep the throwaway data dir")
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when a ratio misses its target"
    )
    args = parser.parse_args(argv)
    args.levels = [int(c) for c in args.concurrency.split(",") if c.strip()]
    if args.answers < 2 or args.answers % 2:
        parser.error("--answers must be an even number >= 2 (cases x 2 contestants)")
    if any(c < 1 for c in args.levels) or args.clusters < 1 or args.worker_processes < 1:
        parser.error("concurrency, clusters and worker processes must be >= 1")
    args.shards = args.shards or args.clusters * args.worker_processes
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    data_dir = Path(tempfile.mkdtemp(prefix="evalsite-bench-"))
    os.environ["EVALSITE_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    sys.path.insert(0, str(ROOT))
    processes = Processes(data_dir)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    restore = None
    try:
        mock = start_mock(processes, args.latency_ms, max_seconds=4 * 3600)
        import django

        django.setup()
        from django.conf import settings

        restore = set_up_database(mock)
        env = dict(os.environ, EVALSITE_WORKERS=str(args.worker_processes))
        roots = [
            processes.start(f"worker-{n}", [*evalsite_command(), "worker"], env).pid
            for n in range(args.clusters)
        ]
        config = {
            "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "cpus": os.cpu_count(),
            "latency_ms": args.latency_ms,
            "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
            "broker": "redis" if settings.REDIS_URL else "orm",
            "clusters": args.clusters,
            "worker_processes": args.worker_processes,
            "shards": args.shards,
            "answers": args.answers,
        }
        print(f"data dir {data_dir}; mock at {mock}; workers {roots}", flush=True)
        warm_up(data_dir, args, roots, mock, processes)
        rows = []
        for concurrency in args.levels:
            rows.append(bench_level(data_dir, args, concurrency, roots, mock))
        rss = worker_rss(roots)
        print_report(rows, config, rss)
        if args.json:
            payload = {"config": config, "rows": [asdict(r) for r in rows], "worker_rss": rss}
            args.json.write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
        failed = any(r.engine.errors or r.engine.timed_out for r in rows)
        missed = any(
            r.engine.wall_s / r.ideal_s > TARGETS.get(r.concurrency, float("inf")) for r in rows
        )
        return 1 if failed or (args.strict and missed) else 0
    finally:
        with contextlib.suppress(Exception):
            cancel_unfinished()
        processes.stop_all()
        if restore is not None:
            with contextlib.suppress(Exception):
                restore_database(restore)
        if not args.keep_data:
            with contextlib.suppress(Exception):
                from django.db import connections

                connections.close_all()
            shutil.rmtree(data_dir, ignore_errors=True)
        else:
            print(f"kept {data_dir}")


def cancel_unfinished(wait_s: float = 5.0) -> None:
    """Ask the shards of any run still active to stop, so workers exit promptly and nothing
    is left queued for another worker (on a shared database or broker)."""
    from runs.models import Run

    active = Run.objects.filter(pk__in=PLANNED, status__in=Run.ACTIVE)
    if not active.update(cancel_requested=True):
        return
    deadline = time.monotonic() + wait_s
    while active.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def warm_up(data_dir: Path, args, roots: list[int], mock: str, processes: Processes) -> None:
    """A small run first, so the timed runs start with booted, imported workers."""
    started = time.monotonic()
    run = plan_run(data_dir, cases=4 * args.shards, concurrency=8, label="bench-warm-up")
    result = measure_engine(run, shards=args.shards, worker_roots=roots, mock=mock, timeout_s=90)
    if result.errors or result.timed_out or result.status != "done":
        logs = "\n".join(processes.tail(f"worker-{n}") for n in range(args.clusters))
        raise SystemExit(f"the warm-up run failed ({result}); worker logs:\n{logs}")
    print(f"warm-up: {result.answers} answers in {time.monotonic() - started:.1f}s", flush=True)


def bench_level(data_dir: Path, args, concurrency: int, roots: list[int], mock: str) -> Row:
    ideal = args.answers * args.latency_ms / 1000 / concurrency
    started = time.monotonic()
    run = plan_run(data_dir, args.answers // 2, concurrency, label=f"bench-c{concurrency}")
    row = Row(concurrency, ideal, engine=None, plan_s=time.monotonic() - started)  # type: ignore[arg-type]
    row.engine = measure_engine(
        run,
        shards=args.shards,
        worker_roots=roots,
        mock=mock,
        timeout_s=max(120.0, 20 * ideal),
    )
    e = row.engine
    print(
        f"C={concurrency}: engine {e.wall_s:.2f}s ({e.wall_s / ideal:.2f} x ideal), "
        f"status {e.status}, {e.errors} errors, plan+store {row.plan_s:.1f}s",
        flush=True,
    )
    if e.timed_out:
        row.notes.append(f"the engine run timed out and was cancelled ({e.status})")
    if e.errors:
        row.notes.append(f"{e.errors} answers were not done (see the run's error_message)")
    time.sleep(1.0)  # let every shard leave its loop before the next measurement
    if not args.skip_plain:
        url, bodies = request_bodies(run)
        row.plain = measure_fan_out("plain", url, bodies, concurrency, mock)
        row.raw = measure_fan_out("raw", url, bodies, concurrency, mock)
        print(
            f"C={concurrency}: plain httpx {row.plain.wall_s:.2f}s "
            f"({row.plain.wall_s / ideal:.2f} x), raw {row.raw.wall_s:.2f}s "
            f"({row.raw.wall_s / ideal:.2f} x)",
            flush=True,
        )
    return row


if __name__ == "__main__":
    sys.exit(main())
