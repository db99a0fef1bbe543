"""Start-up: how long the everyday commands take from the shell, on a warm data dir.

    .venv/bin/python bench/startup.py [--repeats 7] [--data-dir DIR]

Each command runs once untimed (the data dir then holds the demo suite and the fake run's
cache rows, as on a machine that has used evalsite before), then `repeats` times; the figure
is the median wall time from spawning the process to reaping it, with its median CPU time
(its own, not its children's) and its peak RSS. Issue 31's targets: `validate` at most
0.3 s and a warm `run --fake` at most 0.8 s, on an idle machine. Run alone, it prints each
command's figures with ok / MISS and exits 1 on a miss; `bench/engine.py --parts startup`
prints the same in its tables. A shared machine inflates the seconds: read them beside
the load average it prints.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from procs import Processes, evalsite_command

DEMO = "examples/support-desk.yaml"
COMMANDS = {  # name: (arguments, target wall seconds)
    "validate": (["validate", DEMO], 0.3),
    "run --fake": (["run", DEMO, "--fake"], 0.8),
}


@dataclass
class StartupResult:
    command: str
    target_s: float
    walls_s: list[float] = field(default_factory=list)
    cpus_s: list[float] = field(default_factory=list)
    returncodes: list[int] = field(default_factory=list)
    max_rss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def median_s(self) -> float:
        return statistics.median(self.walls_s) if self.walls_s else float("nan")

    @property
    def median_cpu_s(self) -> float:
        return statistics.median(self.cpus_s) if self.cpus_s else float("nan")


def measure_startup(processes: Processes, env: dict, repeats: int) -> list[StartupResult]:
    results = []
    for name, (arguments, target) in COMMANDS.items():
        result = StartupResult(f"evalsite {' '.join(arguments)}", target)
        command_env = dict(env)
        if name == "run --fake" and shutil.which("bwrap") is None:
            # The demo suite has execution checks; without bubblewrap the run refuses them.
            command_env["EVALSITE_UNSAFE_NO_SANDBOX"] = "1"
            result.notes.append("no bubblewrap here: checks ran unsandboxed")
        _once(processes, arguments, command_env)
        for _ in range(repeats):
            wall, cpu, returncode, rss = _once(processes, arguments, command_env)
            result.walls_s.append(wall)
            result.cpus_s.append(cpu)
            result.returncodes.append(returncode)
            result.max_rss_mb = max(result.max_rss_mb, rss)
        if any(result.returncodes):
            result.notes.append(f"exit codes {sorted(set(result.returncodes))}")
        results.append(result)
    return results


def _once(processes: Processes, arguments: list[str], env: dict) -> tuple[float, float, int, float]:
    started = time.time()
    process = processes.start("startup", [*evalsite_command(), *arguments], env)
    exited = processes.reap(process, started)
    return exited.wall_s, exited.cpu_s, exited.returncode, exited.max_rss_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--data-dir", help="a data dir to use (default: a new one, removed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evalsite-startup-") as scratch:
        env = dict(os.environ, EVALSITE_DATA_DIR=args.data_dir or str(Path(scratch) / "data"))
        load = os.getloadavg()[0]
        results = measure_startup(Processes(Path(scratch)), env, args.repeats)
    print(f"start-up, median of {args.repeats} on a warm data dir (load average {load:.1f})")
    for r in results:
        verdict = "FAIL" if any(r.returncodes) else "ok" if r.median_s <= r.target_s else "MISS"
        notes = f" ({'; '.join(r.notes)})" if r.notes else ""
        print(
            f"{r.command}: {r.median_s:.2f} s wall, {r.median_cpu_s:.2f} s CPU, "
            f"peak RSS {r.max_rss_mb:.0f} MB, target {r.target_s:.1f} s: {verdict}{notes}"
        )
    sys.exit(0 if all(r.median_s <= r.target_s and not any(r.returncodes) for r in results) else 1)


if __name__ == "__main__":
    main()
