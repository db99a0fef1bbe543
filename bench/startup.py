"""Start-up: how long the everyday commands take from the shell, on a warm data dir.

Each command runs once untimed (the data dir then holds the demo suite and the fake run's
cache rows, as on a machine that has used evalsite before), then `repeats` times; the figure
is the median wall time from spawning the process to reaping it, with its peak RSS.
"""

from __future__ import annotations

import shutil
import statistics
import time
from dataclasses import dataclass, field

from procs import Processes, evalsite_command

DEMO = "examples/support-desk.yaml"
COMMANDS = {  # name: (arguments, target wall seconds)
    "validate": (["validate", DEMO], 0.5),
    "run --fake": (["run", DEMO, "--fake"], 1.0),
}


@dataclass
class StartupResult:
    command: str
    target_s: float
    walls_s: list[float] = field(default_factory=list)
    returncodes: list[int] = field(default_factory=list)
    max_rss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def median_s(self) -> float:
        return statistics.median(self.walls_s) if self.walls_s else float("nan")


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
            wall, returncode, rss = _once(processes, arguments, command_env)
            result.walls_s.append(wall)
            result.returncodes.append(returncode)
            result.max_rss_mb = max(result.max_rss_mb, rss)
        if any(result.returncodes):
            result.notes.append(f"exit codes {sorted(set(result.returncodes))}")
        results.append(result)
    return results


def _once(processes: Processes, arguments: list[str], env: dict) -> tuple[float, int, float]:
    started = time.time()
    process = processes.start("startup", [*evalsite_command(), *arguments], env)
    exited = processes.reap(process, started)
    return exited.wall_s, exited.returncode, exited.max_rss_mb
