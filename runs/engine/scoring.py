"""Scoring a run's answers (SPEC §7) and storing the verdicts on their rows.

Schema and deterministic checks are quick: an answer with only those is scored as the
shard's writer stores it (:meth:`Scoring.written`, its verdicts in the same row values).
Execution checks run in the sandbox, a few at a time, off the web process, and python
checks run the suite's own code: an answer with one is scored after the calls
(:func:`score_run`, in the shard that finishes the run), as is any done answer still
unscored (written by an older process).
"""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


class Scoring:
    """How a run's answers are scored: its suite's tasks, where its python checks are
    imported from, a no-look run's texts (held by this process). Made once a shard or a
    :func:`score_run`; one answer is scored by :meth:`score`, and its row gets
    :func:`verdict_columns`."""

    def __init__(self, run: Run) -> None:
        version = run.suite_version
        suite = version.core_suite()
        self.tasks = {task.id: task for task in suite.tasks}
        self.templating = suite.templating
        self.allow_python = version.origin in FILESYSTEM_ORIGINS
        self.folders = python_path(version)
        self.held = sealed.held(run.pk)

    def score(self, answer: Unscored, sandbox: Sandbox | None = None) -> AnswerScore:
        task = self.tasks[answer.task_id]
        return score_answer(
            task,
            task.case(answer.case_id),
            self.held.text(answer) if self.held else answer.text,
            sandbox=sandbox,
            allow_python=self.allow_python,
            python_path=self.folders,
            grade=answer.grade_passed,  # a graded case passes with its grade (none yet: not)
            templating=self.templating,
        )

    def executes(self, answer: Unscored) -> bool:
        """Whether the answer's case has an execution check (it runs in the sandbox)."""
        return bool(self.tasks[answer.task_id].case(answer.case_id).check)

    def as_written(self, answer: Unscored) -> bool:
        """Whether the answer is scored as the shard's writer stores it (:meth:`written`):
        not with an execution check, which waits on the sandbox, nor with a python check,
        which runs the suite's own code (imported from its folder) on the shard's database
        thread. Those are scored after the calls (:func:`score_run`)."""
        task = self.tasks[answer.task_id]
        checks = [*task.checks, *task.case(answer.case_id).checks]
        return not self.executes(answer) and not any("python" in check for check in checks)

    def written(self, answers: list[Unscored]) -> dict[int, dict[str, Any]]:
        """The verdict columns of each of `answers` (done, being stored) that is scored as
        it is written, by id. Its grade is none yet: a done answer's row is written once,
        and its grade copied after it is scored (runs.engine.judging)."""
        now = timezone.now()
        return {
            answer.pk: verdict_columns(self.score(answer), now, sealed=self.held is not None)
            for answer in answers
            if self.as_written(answer)
        }


def score_run(run: Run) -> int:
    """Score every done answer not scored yet (most were as they were written: those with
    an execution or a python check, or written by an older process, are not); returns how
    many were scored. In batches by id, so a run of 100,000 answers never holds them all."""
    if run.no_look and sealed.held(run.pk) is None:
        return 0  # the answers' texts live only in the process that runs it
    scoring = Scoring(run)
    sandbox: Sandbox | None = None
    unscored = (
        Answer.objects.filter(run=run, status=Answer.Status.DONE, scored_at__isnull=True)
        .values_list("pk", "task_id", "case_id", "text", "grade_passed")
        .order_by("pk")
    )

    def score(answer: Unscored) -> tuple[Unscored, AnswerScore]:
        return answer, scoring.score(answer, sandbox)

    scored, after = 0, 0
    with ThreadPoolExecutor(max_workers=settings.EVALSITE_CHECK_CONCURRENCY) as pool:
        while batch := [Unscored(*row) for row in unscored.filter(pk__gt=after)[:SCORE_BATCH]]:
            executes = any(scoring.executes(answer) for answer in batch)
            if executes and sandbox is None:
                sandbox = sandbox_or_none()
            # Only execution checks wait outside this interpreter, so only a batch with one
            # is scored on the pool: for the rest, handing each answer to a thread cost more
            # than scoring it (docs/performance.md).
            scoring_map = pool.map if executes else map
            _store(dict(scoring_map(score, batch)), sealed=scoring.held is not None)
            scored, after = scored + len(batch), batch[-1].pk
    return scored


def _store(results: dict[Unscored, AnswerScore], *, sealed: bool = False) -> None:
    """The verdicts on their rows."""
    now = timezone.now()
    changes = {
        answer.pk: verdict_columns(result, now, sealed=sealed) for answer, result in results.items()
    }
    with transaction.atomic():
        update_each(Answer, changes)


def verdict_columns(result: AnswerScore, now: dt.datetime, *, sealed: bool) -> dict[str, Any]:
    """The columns an answer's verdicts fill, scored at `now`; in a no-look run (`sealed`),
    without the notes that quote the answer or the case
    (:func:`~evalsite.core.no_look.sealed_scores`)."""
    execution = result.execution
    columns = {
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
    return sealed_scores(columns) if sealed else columns
