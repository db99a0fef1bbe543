"""The benchmark's child processes and what /proc says about processes: trees, RSS, CPU.

Every child is the leader of its own process group and gets SIGTERM from the kernel if the
benchmark dies outright (Linux's PR_SET_PDEATHSIG), so a crash never leaves one running.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MOCK = Path(__file__).resolve().parent / "mock_provider.py"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if this script dies."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class Exited:
    """How a one-shot child ended, from wait4(): its own rusage, not its children's."""

    returncode: int
    wall_s: float
    cpu_s: float
    max_rss_mb: float


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

    def reap(self, process: subprocess.Popen, started: float) -> Exited:
        """Wait for a one-shot child with wait4(), for its CPU and peak RSS (ru_maxrss is
        the process's VmHWM), and forget it: its pid may be reused once reaped."""
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except ChildProcessError:  # reaped by stop_all() while stopping early
            return Exited(process.returncode or -1, time.time() - started, 0.0, 0.0)
        wall = time.time() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        self.started = [(n, p) for n, p in self.started if p is not process]
        cpu = usage.ru_utime + usage.ru_stime
        return Exited(process.returncode, wall, cpu, max_rss_mb=usage.ru_maxrss / 1024)

    def stop(self, names: list[str], grace_s: float = 10.0) -> None:
        """Stop some of the children (see :meth:`stop_all`)."""
        chosen = [(n, p) for n, p in self.started if n in names]
        self.started = [(n, p) for n, p in self.started if n not in names]
        _stop(chosen, grace_s)

    def stop_all(self, grace_s: float = 10.0) -> None:
        _stop(self.started, grace_s)
        self.started = []

    def tail(self, name: str, lines: int = 20) -> str:
        path = self.log_dir / f"{name}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])


def _stop(children: list[tuple[str, subprocess.Popen]], grace_s: float) -> None:
    # SIGTERM to each leader only: a django-q2 cluster whose whole group gets SIGTERM
    # hangs in "stopping" forever (its sentinel dies first); given to the leader alone,
    # it stops its own children and exits in about a second.
    for _, process in children:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for _, process in children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(max(0.1, deadline - time.monotonic()))
    for _, process in children:
        # The group too: a cluster's forked workers outlive a killed parent otherwise.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)


class Waiter:
    """Reaps a one-shot child on a thread, so its exit time and rusage are exact while the
    caller polls the database."""

    def __init__(self, processes: Processes, process: subprocess.Popen, started: float):
        self.exited: Exited | None = None
        self.process = process
        self._thread = threading.Thread(
            target=self._reap, args=(processes, started), daemon=True, name="reap"
        )
        self._thread.start()

    def _reap(self, processes: Processes, started: float) -> None:
        self.exited = processes.reap(self.process, started)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def wait(self, timeout_s: float | None = None) -> Exited | None:
        self._thread.join(timeout_s)
        return self.exited


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


# --- /proc ---------------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from 3 (state) on


def descendants(roots: list[int]) -> list[int]:
    """`roots` and every process below them."""
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
    """A ``kB`` line of /proc/PID/status (VmHWM, VmRSS), 0 when the process is gone."""
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


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss(pids: list[int]) -> list[tuple[str, float]]:
    """``(name[pid], VmHWM MB)`` of each process still alive."""
    found = []
    for pid in pids:
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        found.append((f"{name}[{pid}]", status_kb(pid, "VmHWM") / 1024))
    return found
