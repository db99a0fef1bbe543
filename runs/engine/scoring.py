"""Scoring a run's answers (SPEC §7) and storing the verdicts on their rows.

Schema and deterministic checks are quick and run inline; execution checks run in the
sandbox, a few at a time, off the web process (in the shard that finishes the run).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from evalsite.core.no_look import sealed_scores
from evalsite.core.scoring.answer import AnswerScore, score_answer
from evalsite.core.scoring.checks import python_check_error
from evalsite.core.scoring.sandbox import Sandbox
from evalsite.core.suites import Suite
from runs import sealed
from runs.engine.sandbox import sandbox_or_none
from runs.models import Answer, Run, SuiteVersion
from runs.models.rows import update_each
from runs.models.suites import FILESYSTEM_ORIGINS


def python_path(version: SuiteVersion) -> list[str]:
    """Where a python check's module is looked for first: the folder of the file the
    version was registered from."""
    return [str(Path(version.source_path).parent)] if version.source_path else []


def python_check_problems(suite: Suite, folders: list[str]) -> list[str]:
    """Each python check of a suite read from a file that cannot be imported from
    `folders` (where scoring will look first), named by where it is in the suite."""
    problems = []
    for index, task in enumerate(suite.tasks):
        checks = [(f"tasks[{index}].checks[{k}]", c) for k, c in enumerate(task.checks)]
        for j, case in enumerate(task.cases):
            checks += [
                (f"tasks[{index}].cases[{j}].checks[{k}]", c) for k, c in enumerate(case.checks)
            ]
        for where, check in checks:
            reference = check.get("python")
            error = python_check_error(reference, folders) if isinstance(reference, str) else None
            if error:
                problems.append(f"{where}.python: {error}")
    return problems


SCORE_BATCH = 1000


@dataclass(frozen=True, slots=True, eq=False)  # one per row: kept apart by identity
class Unscored:
    """What scoring reads of an answer: its values, not an ``Answer`` built from them
    (building 100,000 model instances was a third of the reading)."""

    pk: int
    task_id: str
    case_id: str
    text: str
    grade_passed: bool | None
    is_judge_call = False  # for the no-look store's key (runs.sealed), as Answer has it


def score_run(run: Run) -> int:
    """Score every done answer not scored yet; returns how many were scored. In batches by
    id, so a run of 100,000 answers never holds them all."""
    version = run.suite_version
    held = sealed.held(run.pk)
    if run.no_look and held is None:
        return 0  # the answers' texts live only in the process that runs it
    suite = version.core_suite()
    tasks = {task.id: task for task in suite.tasks}
    folders = python_path(version)
    sandbox: Sandbox | None = None
    unscored = (
        Answer.objects.filter(run=run, status=Answer.Status.DONE, scored_at__isnull=True)
        .values_list("pk", "task_id", "case_id", "text", "grade_passed")
        .order_by("pk")
    )

    def score(answer: Unscored) -> tuple[Unscored, AnswerScore]:
        task = tasks[answer.task_id]
        return answer, score_answer(
            task,
            task.case(answer.case_id),
            held.text(answer) if held else answer.text,
            sandbox=sandbox,
            allow_python=version.origin in FILESYSTEM_ORIGINS,
            python_path=folders,
            grade=answer.grade_passed,  # a graded case passes with its grade (none yet: not)
            templating=suite.templating,
        )

    scored, after = 0, 0
    with ThreadPoolExecutor(max_workers=settings.EVALSITE_CHECK_CONCURRENCY) as pool:
        while batch := [Unscored(*row) for row in unscored.filter(pk__gt=after)[:SCORE_BATCH]]:
            executes = any(tasks[a.task_id].case(a.case_id).check for a in batch)
            if executes and sandbox is None:
                sandbox = sandbox_or_none()
            # Only execution checks wait outside this interpreter, so only a batch with one
            # is scored on the pool: for the rest, handing each answer to a thread cost more
            # than scoring it (docs/performance.md).
            scoring = pool.map if executes else map
            _store(dict(scoring(score, batch)), sealed=held is not None)
            scored, after = scored + len(batch), batch[-1].pk
    return scored


def _store(results: dict[Unscored, AnswerScore], *, sealed: bool = False) -> None:
    """The verdicts on their rows; in a no-look run, without the notes that quote the
    answer or the case (:func:`~evalsite.core.no_look.sealed_scores`)."""
    now = timezone.now()
    changes = {}
    for answer, result in results.items():
        execution = result.execution
        changes[answer.pk] = {
            "schema_verdict": result.schema.verdict,
            "schema_error": result.schema.error or "",
            "parsed_json": result.schema.parsed if result.schema.verdict == "pass" else None,
            "checks": result.checks.to_dict(),
            "checks_passed": result.checks.passed,
            "exec_check": execution.to_dict() if execution else None,
            "exec_verdict": execution.verdict if execution else "",
            "match_score": result.match.score if result.match else None,
            "match_passed": result.match.passed if result.match else None,
            "match_detail": result.match.detail() if result.match else None,
            "passed": result.passed,
            "scored_at": now,
        }
        if sealed:
            changes[answer.pk] = sealed_scores(changes[answer.pk])
    with transaction.atomic():
        update_each(Answer, changes)
