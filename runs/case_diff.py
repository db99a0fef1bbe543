"""The per-case diff where the rows meet the core: each case's passed attempts in a run, or
in an evalpin results file (:mod:`evalsite.core.report.case_diff`).

A run's case is ``task/case`` for a run of one contestant, ``contestant task/case`` for a
run of several (the same contestant is compared with itself). Against a results file, whose
rows name evalpin's case ids, a run of one contestant is keyed by case id alone (an evalpin
suite imported by `evalsite import` keeps its ids as case ids).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from django.db.models import Count, Min, Q

from evalsite.core.report.case_diff import (
    Attempts,
    CaseChange,
    ResultsError,
    as_case_ids,
    diff_cases,
    looks_like_results,
    parse_results,
)
from runs.models import Answer, Run

RESULTS_MAX_BYTES = 5 * 1024 * 1024


class SideError(ValueError):
    """A side of the diff that cannot be read; the message says why."""


def run_attempts(run: Run, *, by_case_id: bool = False) -> dict[str, Attempts]:
    """Each case's passed and total attempts (answers; an error is a failed attempt), in the
    order the run planned them."""
    rows = (
        Answer.objects.filter(run=run)
        .values("contestant", "task_id", "case_id")
        .annotate(passed=Count("pk", filter=Q(passed=True)), total=Count("pk"), first=Min("pk"))
        .order_by("first")
    )
    several = len(run.contestants) > 1
    if by_case_id:
        if several:
            raise SideError(
                f"run {run.id} has {len(run.contestants)} contestants; a results file holds "
                "one contestant's cases"
            )
        case_ids = [row["case_id"] for row in rows]
        if len(set(case_ids)) != len(case_ids):
            raise SideError(f"run {run.id} has one case id in several tasks; name it task/case")
    attempts = {}
    for row in rows:
        key = row["case_id"] if by_case_id else f"{row['task_id']}/{row['case_id']}"
        if several:
            key = f"{row['contestant']} {key}"
        attempts[key] = Attempts(row["passed"], row["total"])
    return attempts


def results_file(text: str) -> ResultsSide | None:
    """The rows of the evalpin results named by `text` (a results file, or the
    ``.baseline.json`` `evalsite import` makes of one), or None when `text` names no such file
    (it is then a run reference)."""
    path = Path(text)
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            data = handle.read(RESULTS_MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > RESULTS_MAX_BYTES:
        raise SideError(f"{text}: over {RESULTS_MAX_BYTES:,} bytes")
    if looks_like_results(data[:32]):
        try:
            return ResultsSide(parse_results(data.decode("utf-8"), filename=text), raw=True)
        except (ResultsError, UnicodeDecodeError) as error:
            raise SideError(str(error)) from None
    return _imported_baseline(data, text)


def _imported_baseline(data: bytes, text: str) -> ResultsSide | None:
    try:
        document = json.loads(data)
    except ValueError:
        return None
    if not isinstance(document, dict) or document.get("format") != "evalpin-results":
        return None
    try:
        rows = {
            str(row["case"]): Attempts(int(row["passed"]), int(row["total"]))
            for row in document["cases"]
        }
    except (KeyError, TypeError, ValueError):
        raise SideError(f"{text}: not the baseline file `evalsite import` writes") from None
    return ResultsSide(rows, raw=False)


@dataclass(frozen=True)
class ResultsSide:
    """Rows from evalpin: by evalpin's case ids (`raw`), or by the ids `evalsite import`
    gives them."""

    rows: dict[str, Attempts]
    raw: bool

    def by_case_id(self) -> dict[str, Attempts]:
        return as_case_ids(self.rows) if self.raw else self.rows


@dataclass(frozen=True)
class Baseline:
    """What a run's cases are held against (`evalsite run --baseline`): a run's or evalpin's
    cases, and whether they are keyed by case id (evalpin's) or as a run's."""

    name: str
    rows: dict[str, Attempts]
    by_case_id: bool

    def changes(self, run: Run) -> list[CaseChange]:
        return diff_cases(self.rows, run_attempts(run, by_case_id=self.by_case_id))


def load_baseline(ref: str) -> Baseline:
    """The baseline `ref` names: an evalpin results file, the JSON `evalsite import` makes of
    one, or a run reference; SideError or Run.DoesNotExist when it names none."""
    results = results_file(ref)
    if results is not None:
        return Baseline(ref, results.by_case_id(), by_case_id=True)
    run = Run.objects.resolve(ref)
    return Baseline(f"run {run.id}", run_attempts(run), by_case_id=False)


def failing_cases(changes: list[CaseChange]) -> list[CaseChange]:
    """evalpin's rule against a baseline: a case fails when it is worse, or new and not
    fully passing; better, same and gone cases never fail."""
    return [
        c
        for c in changes
        if c.status == "worse"
        or (c.status == "new" and c.after is not None and c.after.passed < c.after.total)
    ]
