"""Scoring one answer of a case: schema verdict, deterministic checks, execution check,
weighted match."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalsite.core.scoring.aggregate import answer_passed
from evalsite.core.scoring.checks import ChecksResult, run_checks
from evalsite.core.scoring.execution import ExecResult, run_execution_check
from evalsite.core.scoring.json_answer import SchemaVerdict, schema_verdict
from evalsite.core.scoring.matching import MatchResult, weighted_match
from evalsite.core.scoring.sandbox import Sandbox
from evalsite.core.suite_parts import Case, Task


@dataclass(frozen=True)
class AnswerScore:
    schema: SchemaVerdict
    checks: ChecksResult
    execution: ExecResult | None
    passed: bool
    match: MatchResult | None = None


def score_answer(
    task: Task,
    case: Case,
    text: str,
    *,
    sandbox: Sandbox | None,
    allow_python: bool,
    python_path: Sequence[str] = (),
    grade: bool | None = None,
    templating: str = "default",
) -> AnswerScore:
    """Every verdict for `text` as an answer to `case`; the execution check needs `sandbox`.

    Task checks run before the case's own; all must pass. An execution check with no
    sandbox available is an error result, never a pass. A task with ``weighted_match``
    scores the case's ``expected`` list; its pass is part of the answer's. A graded case
    passes only with its ``grade`` (the grade's pass when the judge has given it, else
    None: not passed until it has). ``templating`` is the suite's: check values with
    placeholders render in it with the case's vars.
    """
    verdict = schema_verdict(text, task.answer_schema)
    checks = run_checks(
        text,
        [*task.checks, *case.checks],
        allow_python=allow_python,
        case_vars=dict(case.vars),
        python_path=tuple(python_path),
        templating=templating,
    )
    execution = _execution(text, case.check, sandbox)
    match = _match(text, task, case)
    passed = answer_passed(
        verdict.verdict,
        checks.passed,
        execution.verdict if execution else None,
        match.passed if match else None,
        graded=task.case_grade(case) is not None,
        grade=grade,
    )
    return AnswerScore(verdict, checks, execution, passed, match)


def _match(text: str, task: Task, case: Case) -> MatchResult | None:
    if task.weighted_match is None or not isinstance(case.expected, list):
        return None
    return weighted_match(text, case.expected, task.weighted_match)


def _execution(
    text: str, check: Mapping[str, Any] | None, sandbox: Sandbox | None
) -> ExecResult | None:
    if not check:
        return None
    if sandbox is None:
        return ExecResult(
            verdict="error",
            exit_code=None,
            output_tail="",
            blocks=(),
            isolation="none",
            duration_ms=0,
            note="no sandbox available; execution checks were not run",
        )
    return run_execution_check(text, check, sandbox=sandbox)
