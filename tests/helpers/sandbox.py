"""Helpers for the execution-check tests: answers holding a block, and the machine inspected after."""

from __future__ import annotations

import os
import pathlib
import time

from evalsite.core.scoring.execution import run_execution_check
from evalsite.core.scoring.sandbox import SANDBOX_UID, Sandbox


def block(code: str, language: str = "python") -> str:
    """An answer holding one fenced block, as a model would write it."""
    return f"Here is my answer:\n\n```{language}\n{code.strip()}\n```\n"


def next_check_works(sandbox: Sandbox) -> None:
    """After an attack the runner goes on: a plain check still runs and passes."""
    result = run_execution_check(
        block("print('still fine')"),
        {"run": 'test "$(python3 "$ANSWER")" = "still fine"', "timeout_s": 10},
        sandbox=sandbox,
    )
    assert (result.verdict, result.note) == ("pass", None)


def running_processes(*, uid: int = SANDBOX_UID, cmdline: str = "") -> list[str]:
    """Processes (zombies excepted) run by ``uid`` or whose command line contains
    ``cmdline`` (when given), read from /proc."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # it ended while we looked
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("State", "").startswith("Z") or int(entry.name) == os.getpid():
            continue
        real_uid = int(fields["Uid"].split()[0])
        if real_uid == uid or (cmdline and cmdline in command):
            found.append(f"{entry.name} uid={real_uid} {command.strip()}")
    return found


def no_processes_left(*, cmdline: str = "", within_s: float = 3.0) -> list[str]:
    """[] once nothing of the sandbox uid (or matching ``cmdline``) runs; what still runs
    after ``within_s`` otherwise (the kernel takes a moment to tear a namespace down)."""
    deadline = time.monotonic() + within_s
    while True:
        left = running_processes(cmdline=cmdline)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)
