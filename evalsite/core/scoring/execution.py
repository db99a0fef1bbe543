"""Execution checks for code tasks (SPEC §7.3): every fenced block runs on a fresh fixture.

Each fenced block of the answer is one sandbox :class:`~evalsite.core.scoring.sandbox.Job`
with its own new working directory, ``setup`` run again; the last block's result is the
verdict and the earlier ones are recorded beside it. An answer with no fenced block runs as
a whole (trimmed). Verdicts:

- ``pass``: ``run`` exited 0.
- ``fail``: ``run`` exited non-zero, or the block ran past ``timeout_s`` (setup and run
  together), or was killed for a limit - the answer's own doing.
- ``error``: not the answer's fault - ``setup`` exited non-zero or never finished, the
  sandbox failed to start, or the check has no ``run``. An errored answer is excluded from
  judging rather than counted as a loss.
"""

from __future__ import annotations

import dataclasses
import signal
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from evalsite.core.scoring.fences import FencedBlock, fenced_blocks
from evalsite.core.scoring.sandbox import Job, Outcome, Sandbox

__all__ = ["BlockResult", "DEFAULT_TIMEOUT_S", "ExecResult", "run_execution_check", "run_many"]

DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 3600.0
Verdict = Literal["pass", "fail", "error"]
_EXTENSIONS = {
    "python": ".py", "py": ".py", "python3": ".py", "bash": ".sh", "sh": ".sh",
    "shell": ".sh", "zsh": ".sh", "javascript": ".js", "js": ".js", "typescript": ".ts",
    "ts": ".ts", "ruby": ".rb", "go": ".go", "rust": ".rs", "c": ".c", "cpp": ".cpp",
    "c++": ".cpp", "java": ".java", "sql": ".sql", "json": ".json", "yaml": ".yaml",
    "awk": ".awk", "jq": ".jq",
}  # fmt: skip


@dataclass(frozen=True)
class BlockResult:
    verdict: Verdict
    exit_code: int | None
    output_tail: str
    note: str | None = None
    duration_ms: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ExecResult:
    """The last block's result, the earlier blocks' in ``blocks``, and where they ran."""

    verdict: Verdict
    exit_code: int | None
    output_tail: str
    blocks: tuple[BlockResult, ...]
    isolation: str
    duration_ms: int
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON; ``blocks`` is a list of dicts."""
        return {**dataclasses.asdict(self), "blocks": [b.to_dict() for b in self.blocks]}


def run_execution_check(
    answer_text: str, check: Mapping[str, Any], *, sandbox: Sandbox
) -> ExecResult:
    """Run ``check`` ({setup, run, timeout_s}) on every fenced block of ``answer_text``.

    Blocking (plain subprocesses); call it off any event loop. The caller bounds how many
    run at once (see :func:`run_many`).
    """
    started = time.monotonic()
    run = check.get("run")
    if not isinstance(run, str) or not run.strip():
        note = "the execution check has no 'run' command"
        return ExecResult("error", None, "", (), sandbox.isolation, 0, note)
    timeout_s = _timeout(check.get("timeout_s"))
    setup = check.get("setup") or ""
    results = [
        _run_block(sandbox, block, answer_text, str(run), str(setup), timeout_s)
        for block in _blocks(answer_text)
    ]
    last = results[-1]
    duration_ms = round((time.monotonic() - started) * 1000)
    return ExecResult(
        last.verdict,
        last.exit_code,
        last.output_tail,
        tuple(results[:-1]),
        sandbox.isolation,
        duration_ms,
        last.note,
    )


def run_many(
    jobs: Iterable[tuple[str, Mapping[str, Any]]], *, sandbox: Sandbox, max_workers: int = 4
) -> list[ExecResult]:
    """:func:`run_execution_check` for each (answer_text, check), at most ``max_workers`` at
    a time, results in the order of ``jobs``."""
    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="exec-check") as pool:
        futures = [
            pool.submit(run_execution_check, text, check, sandbox=sandbox) for text, check in jobs
        ]
        return [future.result() for future in futures]


def _blocks(answer_text: str) -> list[FencedBlock]:
    trimmed = answer_text.strip()
    return fenced_blocks(trimmed) or [FencedBlock("", trimmed + "\n")]


def _timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return DEFAULT_TIMEOUT_S
    return min(float(value), MAX_TIMEOUT_S)


def _run_block(
    sandbox: Sandbox, block: FencedBlock, answer_text: str, run: str, setup: str, timeout: float
) -> BlockResult:
    job = Job(
        run=run,
        setup=setup,
        code=block.code,
        filename="answer" + _EXTENSIONS.get(block.language, ""),
        answer_text=answer_text,
        timeout_s=timeout,
    )
    try:
        outcome = sandbox.run(job)
    except OSError as error:
        return BlockResult("error", None, "", f"the sandbox could not start: {error}")
    verdict, note = _judge(outcome, timeout)
    return BlockResult(verdict, outcome.exit_code, outcome.output_tail, note, outcome.duration_ms)


def _judge(outcome: Outcome, timeout: float) -> tuple[Verdict, str | None]:
    seconds = f"{timeout:g}s"
    if outcome.phase == "start":
        if outcome.timed_out:
            return "error", f"setup timed out after {seconds}"
        return "error", f"the sandbox or setup failed before run started (exit {outcome.exit_code})"
    if outcome.phase == "setup":
        return "error", f"setup failed with exit code {outcome.exit_code}"
    if outcome.timed_out:
        return "fail", f"timed out after {seconds}"
    if outcome.exit_code == 0:
        return "pass", None
    return "fail", _exit_note(outcome.exit_code)


def _exit_note(code: int | None) -> str:
    if code is not None and 128 < code < 128 + 65:
        try:
            name = signal.Signals(code - 128).name
        except ValueError:
            return f"exit code {code}"
        reason = {"SIGXCPU": " (CPU time limit)", "SIGXFSZ": " (file size limit)"}
        return f"exit code {code}: killed by {name}{reason.get(name, '')}"
    return f"exit code {code}"
