"""Scorecards: a suite's named, weighted criteria, scored per answer and per contestant.

A suite's ``scorecard:`` lists criteria ``{criterion, weight, scorer}``; each scorer reads one
verdict an answer already has (:data:`SCORERS`). Per answer, every criterion that applies to
it gives a score 0-1 and a pass; one that does not apply (``exec`` on a case with no
execution check, ``schema`` on a task with no schema) is left out and the weights are
renormalised over the criteria that apply. The answer's score is that weighted mean, and it
passes the scorecard when every applicable criterion passes.

An answer that errored is an error, excluded, never a 0: a provider error, and, when a
criterion reads the grade, a graded answer whose judge reply held no usable score. A
refusal (error kind ``refused``) is the model's own answer, not a failure to get one: it
scores 0 and fails. An answer
no criterion applies to is not scored (and not an error).

Per contestant (a cell: ``model`` or ``model@variant``) the score is the mean of its scored
answers' scores. Without a scorecard each answer scores 1 when it passed every verdict it
has (schema, checks, execution check, grade, match) and 0 otherwise, so the cell score is
the share of scored answers that passed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from evalsite.core.problems import Problem, SourceMap
from evalsite.core.providers.base import ErrorKind
from evalsite.core.scoring.json_answer import parse_json_answer
from evalsite.core.suite_parts import NUMBER, as_type, dict_items
from evalsite.core.suite_schema import SCORERS

if TYPE_CHECKING:
    from evalsite.core.suites import Suite

__all__ = [
    "SCORERS", "CaseScore", "Criterion", "CriterionScore", "criteria_from", "json_valid_of",
    "score_answer", "scorecard_problems", "scorecard_report",
]  # fmt: skip


class Verdicts(Protocol):
    """What the scorecard reads of one answer (the report's AnswerRow has it all)."""

    @property
    def contestant(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def error_kind(self) -> str: ...
    @property
    def schema_verdict(self) -> str: ...
    @property
    def has_checks(self) -> bool: ...
    @property
    def checks_passed(self) -> bool | None: ...
    @property
    def exec_verdict(self) -> str: ...
    @property
    def graded(self) -> bool: ...
    @property
    def grade_score(self) -> int | None: ...
    @property
    def grade_passed(self) -> bool | None: ...
    @property
    def match_score(self) -> float | None: ...
    @property
    def match_passed(self) -> bool | None: ...
    @property
    def json_valid(self) -> bool | None: ...
    @property
    def effective_pass(self) -> bool: ...


@dataclass(frozen=True)
class Criterion:
    name: str
    weight: float
    scorer: str

    def to_dict(self) -> dict[str, Any]:
        return {"criterion": self.name, "weight": self.weight, "scorer": self.scorer}


@dataclass(frozen=True)
class CriterionScore:
    score: float  # 0-1
    passed: bool


@dataclass(frozen=True)
class CaseScore:
    """One answer on the scorecard: its weighted score and pass over the criteria that apply
    (``criteria``), or the error that excludes it. ``score`` None: not scored."""

    score: float | None = None
    passed: bool = False
    criteria: Mapping[str, CriterionScore] = field(default_factory=dict)
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """As answers.jsonl shows it: ``passed`` is None when the answer was not scored."""
        return {
            "score": self.score,
            "passed": self.passed if self.score is not None else None,
            "error": self.error or None,
            "criteria": {
                name: {"score": one.score, "passed": one.passed}
                for name, one in self.criteria.items()
            },
        }


def _binary(passed: bool) -> CriterionScore:
    return CriterionScore(1.0 if passed else 0.0, passed)


def _schema(a: Verdicts) -> CriterionScore | None:
    if a.schema_verdict in ("", "not_applicable"):
        return None
    return _binary(a.schema_verdict == "pass")


def _grade(a: Verdicts) -> CriterionScore | None:
    if not a.graded or a.grade_score is None:
        return None
    return CriterionScore((a.grade_score - 1) / 4, a.grade_passed is True)


def _match(a: Verdicts) -> CriterionScore | None:
    return None if a.match_score is None else CriterionScore(a.match_score, a.match_passed is True)


# scorer -> the criterion's score on one answer, None where it does not apply
_READERS: dict[str, Callable[[Verdicts], CriterionScore | None]] = {
    "schema": _schema,
    "checks": lambda a: _binary(a.checks_passed is True) if a.has_checks else None,
    "exec": lambda a: _binary(a.exec_verdict == "pass") if a.exec_verdict else None,
    "grade": _grade,
    "weighted_match": _match,
    "json_valid": lambda a: None if a.json_valid is None else _binary(a.json_valid),
}
assert tuple(_READERS) == SCORERS  # the suite schema's enum names every reader


def json_valid_of(schema_verdict: str, text: str) -> bool:
    """Whether an answer's JSON parses (found as for the schema verdict): read from the
    schema verdict when the task has a schema, else parsed from the text."""
    if schema_verdict in ("pass", "schema_fail", "parse_fail"):
        return schema_verdict != "parse_fail"
    return parse_json_answer(text).ok


# The two scores of an answer on no scorecard, one value each (they are frozen): a report of
# 100,000 answers keeps every answer's score while it is built.
_PASSED, _FAILED = CaseScore(1.0, True), CaseScore(0.0, False)


def score_answer(criteria: Sequence[Criterion], answer: Verdicts) -> CaseScore:
    """One answer on the scorecard (without criteria: 1 or 0, passed every verdict or not)."""
    if answer.status != "done" and answer.error_kind == ErrorKind.REFUSED:
        return _FAILED
    if answer.status != "done":
        return CaseScore(error=answer.error_kind or "error")
    reads_grade = not criteria or any(c.scorer == "grade" for c in criteria)
    if reads_grade and answer.graded and answer.grade_score is None:
        return CaseScore(error="grade_unusable")
    if not criteria:
        return _PASSED if answer.effective_pass else _FAILED
    scores = {c.name: s for c in criteria if (s := _READERS[c.scorer](answer)) is not None}
    if not scores:
        return CaseScore()
    weights = {c.name: c.weight for c in criteria if c.name in scores}
    total = math.fsum(weights.values())
    score = math.fsum(weights[name] * scores[name].score for name in scores) / total
    return CaseScore(score, all(s.passed for s in scores.values()), scores)


def scorecard_report(
    criteria: Sequence[Criterion],
    answers: Sequence[Verdicts],
    contestants: Sequence[str],
    cards: Sequence[CaseScore] | None = None,
) -> dict[str, Any]:
    """The report's ``scorecard``: the criteria (None without a scorecard) and per contestant
    its score, passed / scored answers, errors and each criterion's mean and pass rate.
    `cards`: each answer's :func:`score_answer`, when the caller has them."""
    if cards is None:
        cards = [score_answer(criteria, answer) for answer in answers]
    cases: dict[str, list[CaseScore]] = defaultdict(list)
    for answer, card in zip(answers, cards, strict=True):
        cases[answer.contestant].append(card)
    names = [*contestants, *(name for name in cases if name not in contestants)]
    return {
        "criteria": [c.to_dict() for c in criteria] or None,
        "cells": {name: _cell(criteria, cases.get(name, [])) for name in names},
    }


def _cell(criteria: Sequence[Criterion], cases: list[CaseScore]) -> dict[str, Any]:
    scored = [case for case in cases if case.score is not None]
    return {
        "score": _mean(case.score for case in scored),
        "passed": sum(1 for case in scored if case.passed),
        "scored": len(scored),
        "errors": sum(1 for case in cases if case.error),
        "criteria": {c.name: _criterion_cell(c.name, scored) for c in criteria},
    }


def _criterion_cell(name: str, scored: list[CaseScore]) -> dict[str, Any]:
    scores = [case.criteria[name] for case in scored if name in case.criteria]
    return {
        "mean": _mean(s.score for s in scores),
        "pass_rate": _mean(1.0 if s.passed else 0.0 for s in scores),
        "n": len(scores),
    }


def _mean(values: Iterable[float | None]) -> float | None:
    items = [value for value in values if value is not None]
    return math.fsum(items) / len(items) if items else None


# --- the suite's scorecard: parsing and the checks a JSON Schema cannot make ----------------


def criteria_from(value: Any) -> tuple[Criterion, ...]:
    """The well-formed criteria of a (possibly invalid) ``scorecard:`` value."""
    criteria = []
    for item in dict_items(value):
        name = as_type(item.get("criterion"), str, "")
        weight, scorer = as_type(item.get("weight"), NUMBER, 0), item.get("scorer")
        if name and weight > 0 and isinstance(scorer, str) and scorer in _READERS:
            criteria.append(Criterion(name, weight, scorer))
    return tuple(criteria)


def _has_schema(suite: Suite) -> bool:
    return any(task.schema is not None for task in suite.tasks)


def _has_checks(suite: Suite) -> bool:
    return any(task.checks or any(case.checks for case in task.cases) for task in suite.tasks)


def _has_exec(suite: Suite) -> bool:
    return any(case.check is not None for task in suite.tasks for case in task.cases)


def _has_grade(suite: Suite) -> bool:
    return any(task.graded for task in suite.tasks)


def _has_match(suite: Suite) -> bool:
    return any(task.weighted_match is not None for task in suite.tasks)


# scorer -> (whether the suite has something for it, what it lacks)
_APPLIES: dict[str, tuple[Callable[[Suite], bool], str]] = {
    "schema": (_has_schema, "no task has a schema (schema: or schema_path:)"),
    "checks": (_has_checks, "no task or case has checks:"),
    "exec": (_has_exec, "no task or case has an execution check (check:)"),
    "grade": (_has_grade, "no task or case has grade:"),
    "weighted_match": (_has_match, "no task has weighted_match:"),
    "json_valid": (lambda suite: True, ""),
}


def scorecard_problems(suite: Suite, sources: SourceMap) -> list[Problem]:
    """Duplicate criterion names, and scorers the suite has nothing for: a criterion that
    applies to no answer would only ever be left out."""
    problems = []
    first: dict[str, int | None] = {}
    for index, item in enumerate(dict_items(suite.document.get("scorecard"))):
        name, scorer = item.get("criterion"), item.get("scorer")
        if isinstance(name, str) and name in first:
            message = f"duplicate criterion '{name}' (first at line {first[name]})"
            problems.append(sources.problem(("scorecard", index, "criterion"), message))
        elif isinstance(name, str):
            first[name] = sources.locate(("scorecard", index, "criterion"))[1]
        if isinstance(scorer, str) and scorer in _APPLIES:
            has, lacking = _APPLIES[scorer]
            if not has(suite):
                message = f"the '{scorer}' scorer applies to no answer: {lacking}"
                problems.append(sources.problem(("scorecard", index, "scorer"), message))
    return problems
