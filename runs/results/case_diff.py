"""The per-case diff where the rows meet the core: each case's passed attempts in a run, or
in an evalpin results file (:mod:`evalsite.core.report.case_diff`).

A run's case is ``task/case`` for a run of one contestant, ``contestant task/case`` for a
run of several (the same contestant is compared with itself). Against a results file, whose
rows name evalpin's case ids, a run of one contestant is keyed by case id alone (an evalpin
suite imported by `evalsite import` keeps its ids as case ids).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from django.db.models import Count, Min, Q

from evalsite.core.report.case_diff import (
    Attempts,
    CaseBaseline,
    CaseChange,
    ResultsError,
    as_case_ids,
    diff_cases,
    looks_like_results,
    read_baseline_json,
    read_results,
)
from runs.models import Answer, Run
from runs.models.run import report_run_id

RESULTS_MAX_BYTES = 5 * 1024 * 1024


class SideError(ValueError):
    """A side of the diff that cannot be read; the message says why."""


def run_attempts(run: Run, *, by_case_id: bool = False) -> dict[str, Attempts]:
    """Each case's passed and total attempts, in the order the run planned them: the
    attempts pass^k counts (an error is a failed attempt; an answer a stopped run never
    asked for is none), passed by the stored one rule (a failed grade fails it)."""
    rows = (
        Answer.objects.filter(run=run)
        .finished()
        .values("contestant", "task_id", "case_id")
        .annotate(passed=Count("pk", filter=Q(passed=True)), total=Count("pk"), first=Min("pk"))
        .order_by("first")
    )
    if by_case_id:
        if len(run.contestants) > 1:
            raise SideError(
                f"run {run.id} has {len(run.contestants)} contestants; a results file holds "
                "one contestant's cases"
            )
        case_ids = [row["case_id"] for row in rows]
        if len(set(case_ids)) != len(case_ids):
            raise SideError(f"run {run.id} has one case id in several tasks; name it task/case")
    return {
        _key(run, row["contestant"], row["task_id"], row["case_id"], by_case_id=by_case_id):
        Attempts(row["passed"], row["total"])
        for row in rows
    }  # fmt: skip


def _key(run: Run, contestant: str, task_id: str, case_id: str, *, by_case_id: bool) -> str:
    key = case_id if by_case_id else f"{task_id}/{case_id}"
    return f"{contestant} {key}" if len(run.contestants) > 1 else key


def left_out(run: Run, answered: Iterable[str], *, by_case_id: bool) -> set[str]:
    """The keys of the suite's cases the run did not answer (`--only`, `--tag`, `--limit`):
    against a baseline they are filtered, not gone, as evalpin's --only leaves them."""
    suite = run.suite_version.core_suite()
    every = {
        _key(run, contestant, task.id, case.id, by_case_id=by_case_id)
        for task in suite.tasks
        for case in task.cases
        for contestant in run.contestants
    }
    return every - set(answered)


def results_file(text: str) -> ResultsSide | None:
    """The rows of the evalpin results named by `text` (a results file, or the
    ``.baseline.json`` `evalsite import` makes of one), or None when `text` names no file, or
    one that is neither and no JSON object (it is then a run reference); SideError naming the
    line or key at fault in a file that is one of them."""
    path = Path(text)
    try:
        if not path.is_file() or report_run_id(text) is not None:
            return None  # no file, or a run's report.json: a run reference
        with path.open("rb") as handle:
            data = handle.read(RESULTS_MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > RESULTS_MAX_BYTES:
        raise SideError(f"{text}: over {RESULTS_MAX_BYTES:,} bytes")
    try:
        if looks_like_results(data[:32]):
            return ResultsSide(read_results(data, filename=text), raw=True)
        rows = read_baseline_json(data, filename=text)
    except ResultsError as error:
        raise SideError(str(error)) from None
    return None if rows is None else ResultsSide(rows, raw=False)


@dataclass(frozen=True)
class ResultsSide:
    """Rows from evalpin: by evalpin's case ids (`raw`), or by the ids `evalsite import`
    gives them."""

    rows: dict[str, Attempts]
    raw: bool

    def by_case_id(self) -> dict[str, Attempts]:
        return as_case_ids(self.rows) if self.raw else self.rows


def baseline_changes(baseline: CaseBaseline, run: Run) -> list[CaseChange]:
    """Each case of `run` against the baseline's; a baseline case the run left out by
    choice (a partial run) is not compared, and a case the suite no longer has is gone."""
    now = run_attempts(run, by_case_id=baseline.by_case_id)
    skipped = left_out(run, now, by_case_id=baseline.by_case_id)
    rows = {key: attempts for key, attempts in baseline.rows.items() if key not in skipped}
    return diff_cases(rows, now)


def load_baseline(ref: str) -> CaseBaseline:
    """The baseline `ref` names: an evalpin results file, the JSON `evalsite import` makes of
    one, or a run reference; SideError or Run.DoesNotExist when it names none."""
    results = results_file(ref)
    if results is not None:
        return CaseBaseline(ref, results.by_case_id(), by_case_id=True)
    run = Run.objects.resolve(ref, paths=True)
    return CaseBaseline(f"run {run.id}", run_attempts(run), by_case_id=False)
