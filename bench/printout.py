"""The engine benchmark's printout: Markdown tables with each target's verdict, then details."""

from __future__ import annotations

import math
import statistics

from paths import EngineResult
from results import MEMORY_TARGET_MB, PHASE_TARGET_S, PROCESS_ANSWERS, Results, mark

PATH_NAMES = {"worker": "engine, evalsite worker", "cli": "engine, evalsite run"}
CLIENT_NAMES = {"httpx": "plain httpx", "aiohttp": "plain aiohttp", "raw": "raw floor"}


def print_report(results: Results, out=print) -> None:
    out()
    out(_heading(results.config))
    for lines in (
        _answers_table(results),
        _pipeline_table(results),
        _process_table(results),
        _fake_table(results),
        _startup_table(results),
        _memory_table(results),
        _phases_table(results),
        _details(results),
    ):
        if lines:
            out()
            for line in lines:
                out(line)


def _heading(c: dict) -> str:
    workers = (
        f"{c['clusters']} cluster(s) x {c['worker_processes']} worker processes, "
        f"{c['shards']} shards a queued run"
        if "worker" in c["paths"]
        else "no workers"
    )
    return (
        f"evalsite engine benchmark - {c['date']} - {c['cpus']} CPUs, load average "
        f"{c['load_average']:.1f} to {c.get('load_average_end', math.nan):.1f} - reference "
        f"work {c.get('reference_cpu_s', math.nan):.2f} s CPU (bench/machine.py) - latency "
        f"{c['latency_ms']:g} ms - {c['database']} / {c['broker']} - {workers} - "
        f"commit {c['commit']}"
    )


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table: numeric columns right-aligned, text ones left-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    numeric = [all(_is_number(r[i]) for r in rows) for i in range(len(header))]
    columns = list(zip(widths, numeric, strict=True))

    def line(cells: list[str]) -> str:
        pairs = zip(cells, columns, strict=True)
        return "| " + " | ".join(c.rjust(w) if r else c.ljust(w) for c, (w, r) in pairs) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" if r else ":" + "-" * (w + 1) for w, r in columns)
    return [line(header), rule + "|", *(line(row) for row in rows)]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return cell in ("", "-")
    return True


def _answers_table(results: Results) -> list[str]:
    if not results.answers and not results.fan_outs:
        return []
    latency_s = results.config["latency_ms"] / 1000
    rows = []
    for level in sorted({m.concurrency for m in results.answers} | set(results.fan_outs)):
        for m in (m for m in results.answers if m.concurrency == level):
            e = m.engine
            rows.append([str(level), PATH_NAMES[e.path], str(e.answers), _f(m.wall_s),
                         _f(m.ideal_s), _f(m.ratio), _f(m.target), m.verdict,
                         _f(m.cpu_ms_per_call), str(e.peak_in_flight), str(e.errors)])  # fmt: skip
        for kind, fan in results.fan_outs.get(level, {}).items():
            ideal = fan.requests * latency_s / level
            rows.append([str(level), CLIENT_NAMES[kind], str(fan.requests), _f(fan.wall_s),
                         _f(ideal), _f(fan.wall_s / ideal), "", "", _f(fan.cpu_ms_per_request),
                         str(fan.peak_in_flight), str(fan.errors)])  # fmt: skip
    header = ["C", "client", "answers", "wall s", "ideal s", "x ideal", "target", "",
              "CPU ms/answer", "in flight", "errors"]  # fmt: skip
    return [
        "Answers only. ideal = answers x latency / C. Engine wall ends at the last answer "
        "stored; it starts at the run's started_at on both paths (SPEC §17; the workers' pickup "
        "is in the details). "
        "CPU: the engine processes' in the answer phase, or this process's for a fan-out",
        *_table(header, rows),
    ]


def _pipeline_table(results: Results) -> list[str]:
    if not results.pipeline:
        return []
    rows = []
    for m in results.pipeline:
        e = m.engine
        rows.append([str(m.concurrency), PATH_NAMES[e.path], str(e.answers), str(e.judge_calls),
                     _f(e.answers_s), _f(e.judge_first_s), _f(e.judge_last_s), _f(m.wall_s),
                     _f(m.ideal_s), _f(m.ratio), _f(m.target), m.verdict,
                     _f(m.cpu_ms_per_call), str(e.peak_in_flight), str(e.peak_judge_in_flight),
                     str(e.errors)])  # fmt: skip
    header = ["C", "path", "answers", "judge calls", "answers s", "1st judge s", "judges s",
              "run s", "ideal s", "x ideal", "target", "", "CPU ms/call", "in flight",
              "judges in flight", "errors"]  # fmt: skip
    return [
        "Full pipeline: answers, then two judge calls per pair (mock/judge). ideal = (answers "
        "+ judge calls) x latency / C. From the same start as above: the last answer stored, "
        "the first and last judge call stored, and the run's finished_at (run s, the figure). "
        "CPU: the engine processes' over the whole run",
        *_table(header, rows),
    ]


def _process_table(results: Results) -> list[str]:
    """Issue 31: `evalsite run` from spawn to exit, beside plain aiohttp as a process."""
    measured = [m for m in (*results.answers, *results.pipeline) if m.engine.path == "cli"]
    if not measured and not results.process_fan_outs:
        return []
    latency_s = results.config["latency_ms"] / 1000
    rows = []
    for m in measured:
        e = m.engine
        rows.append([str(m.concurrency), f"evalsite run, {m.part}", str(m.calls),
                     _f(e.process_wall_s), _f(m.ideal_s), _f(m.process_ratio),
                     _f(m.process_target), m.process_verdict, _f(e.cpu_process_s),
                     _f(max(e.peak_rss_mb.values(), default=None), 0)])  # fmt: skip
    for level, fan in sorted(results.process_fan_outs.items()):
        ideal = fan.requests * latency_s / level
        rows.append([str(level), f"plain {fan.kind} script, answers", str(fan.requests),
                     _f(fan.process_wall_s), _f(ideal), _f(fan.process_wall_s / ideal), "",
                     "" if not fan.errors else f"{fan.errors} errors", _f(fan.cpu_s),
                     _f(fan.max_rss_mb, 0)])  # fmt: skip
    header = ["C", "process", "calls", "wall s", "ideal s", "x ideal", "target", "", "CPU s",
              "peak RSS MB"]  # fmt: skip
    return [
        "Whole process (issue 31): spawn to exit, the figure a user waits for; ideal as above. "
        f"Targets for runs of {PROCESS_ANSWERS:,} answers (--answers {PROCESS_ANSWERS}). The "
        "plain aiohttp script imports aiohttp, reads the same request bodies and sends them",
        *_table(header, rows),
    ]


def _fake_table(results: Results) -> list[str]:
    fake = results.fake
    if fake is None:
        return []
    row = [str(fake.answers), _f(fake.median_s), _f(min(fake.walls_s, default=None)),
           _f(max(fake.walls_s, default=None)), str(len(fake.walls_s)),
           _f(statistics.median(fake.cpus_s) if fake.cpus_s else None), _f(fake.target_s),
           fake.verdict, _f(fake.max_rss_mb, 0)]  # fmt: skip
    header = ["answers", "median s", "min s", "max s", "runs", "CPU s", "target s", "",
              "peak RSS MB"]  # fmt: skip
    lines = [
        "evalsite run --fake --no-cache of the answers-only suite (no judge), spawn to exit, "
        f"after one untimed run; target for {PROCESS_ANSWERS:,} answers",
        *_table(header, [row]),
    ]
    return lines + [f"failed: {failure}" for failure in fake.failures]


def _startup_table(results: Results) -> list[str]:
    if not results.startup:
        return []
    rows = [
        [s.command, _f(s.median_s), _f(s.median_cpu_s), _f(min(s.walls_s, default=None)),
         _f(max(s.walls_s, default=None)), str(len(s.walls_s)), _f(s.target_s),
         mark(s.median_s, s.target_s), _f(s.max_rss_mb, 0), "; ".join(s.notes) or "-"]
        for s in results.startup
    ]  # fmt: skip
    header = ["command, on a warm data dir", "median s", "CPU s", "min s", "max s", "runs",
              "target s", "", "peak RSS MB", "notes"]  # fmt: skip
    return ["Start-up: wall time from spawn to exit", *_table(header, rows)]


def _memory_table(results: Results) -> list[str]:
    if not results.memory:
        return []
    rows = []
    for m in results.memory:
        e = m.engine
        name, mb = max(m.processes.items(), key=lambda item: item[1], default=("-", None))
        rows.append([PATH_NAMES[e.path], str(e.answers), _f(e.plan_s, 1), _f(e.store_s, 1),
                     _f(e.answers_s, 1), _f(e.done_s, 1), str(len(m.processes)), name,
                     _f(mb, 0), _f(MEMORY_TARGET_MB, 0), m.verdict])  # fmt: skip
    header = ["path", "answers", "plan s", "store s", "answers s", "run s", "processes",
              "largest", "peak RSS MB", "target MB", ""]  # fmt: skip
    return [
        "Memory: one --fake run (cases x 2 contestants x 20 repeats). Peak RSS: the VmHWM of "
        "every worker process and of this bench (it planned the run), or wait4's ru_maxrss of "
        "evalsite run. plan s: loading the suite and make_plan (evalsite run: from its spawn "
        "to its Run row, start-up included); store s: store_plan (evalsite run: from the Run "
        "row to started_at or its last answer row stored, whichever is later); answers s and "
        "run s from the same start as above",
        *_table(header, rows),
    ]


def _phases_table(results: Results) -> list[str]:
    """Issue 31's targets around the memory run's fan-out, for evalsite run."""
    measured = [m for m in results.memory if m.engine.path == "cli"]
    if not measured:
        return []
    rows = []
    for m in measured:
        stored, reported = m.planned_and_stored_s, m.scored_and_reported_s
        rows.append([str(m.engine.answers), _f(stored, 1), _f(PHASE_TARGET_S, 0),
                     mark(stored, PHASE_TARGET_S), _f(reported, 1), _f(PHASE_TARGET_S, 0),
                     mark(reported, PHASE_TARGET_S)])  # fmt: skip
    header = ["answers", "planned and stored s", "target s", "", "scored and reported s",
              "target s", ""]  # fmt: skip
    return [
        "Around the fan-out, evalsite run of the memory run: planned and stored is from its "
        "spawn to the run's started_at; scored and reported from the last answer stored to "
        "the run's finished_at (the report written)",
        *_table(header, rows),
    ]


def _details(results: Results) -> list[str]:
    lines = ["Details:"]
    for m in (*results.answers, *results.pipeline):
        lines.append(f"- {m.part}, {PATH_NAMES[m.engine.path]}, C={m.concurrency}: ")
        lines[-1] += _engine_detail(m.engine)
        lines += [f"  note: {note}" for note in m.engine.notes]
    for m in results.memory:
        sizes = ", ".join(f"{name} {mb:.0f} MB" for name, mb in m.processes.items())
        lines.append(f"- memory, {PATH_NAMES[m.path]}: {_engine_detail(m.engine)}")
        lines.append(f"  peak RSS: {sizes}")
        phases = ", ".join(f"{k} {v:.0f} MB" for k, v in m.engine.sampled_rss_mb.items())
        lines.append(f"  largest RSS of one engine process seen by the 50 ms polls: {phases}")
        lines += [f"  note: {note}" for note in m.engine.notes]
    if results.worker_rss_mb:
        sizes = results.worker_rss_mb
        lines.append(
            "- worker peak RSS (VmHWM) after the worker runs: "
            + ", ".join(f"{name} {mb:.0f} MB" for name, mb in sizes.items())
            + f"; largest {max(sizes.values()):.0f} MB, total {sum(sizes.values()):.0f} MB"
        )
    return lines


def _engine_detail(e: EngineResult) -> str:
    parts = [f"run {e.run_id} {e.status}", f"{e.mock_requests} mock requests"]
    if e.path == "worker":
        parts.append(f"pickup {_f(e.pickup_s)} s")
        if e.pickup_s is not None and e.answers_s is not None:
            parts.append(f"answers from the enqueue {_f(e.answers_s + e.pickup_s)} s")
        parts.append(f"plan {_f(e.plan_s)} s + store {_f(e.store_s)} s in this process")
    else:
        parts.append(f"process wall {_f(e.process_wall_s)} s, exit {e.returncode}")
        parts.append(
            f"spawn to Run row {_f(e.plan_s)} s, Run row to started and stored {_f(e.store_s)} s"
        )
        parts.append(f"resumed by a worker: {'yes' if e.resumed else 'no'}")
    parts.append(f"done {_f(e.done_s)} s")
    parts.append(f"CPU answer phase {_f(e.cpu_answers_s)} s, run {_f(e.cpu_run_s)} s")
    if e.cpu_process_s is not None:
        per_answer = e.cpu_process_s / e.answers * 1000 if e.answers else None
        parts.append(f"whole process {_f(e.cpu_process_s)} s ({_f(per_answer)} ms/answer)")
    busy = sorted((v for v in e.cpu_by_process.values() if v >= 0.05), reverse=True)
    if busy:
        parts.append("by worker process " + ", ".join(f"{v:.1f}" for v in busy))
    return "; ".join(parts)
