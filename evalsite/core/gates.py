"""The suite's CI gates (SPEC §15), checked against a built report.

Every gate in the suite's `gate:` block is checked for every candidate it applies to, and
each result names the gate, the contestant, the figure and the threshold, so a failing CI
job says exactly what failed. A gate that cannot be checked (no interval below n = 8, no
checks in the suite) fails with the reason, except `max_regression_points` without a pinned
baseline run, which is skipped with a note: the first run of a suite has nothing to regress
from.

The scorecard gates (`min_score`, `min_pass_rate`) apply to every contestant, the baseline
included: a scorecard score is absolute, not a comparison with the baseline, and a run of
one model has no candidate. Like every other rate gate they take a fraction 0-1.
`max_regression_points` compares every measure of the run with the pinned run's by the one
regression rule of `compare --fail-on-regression` (report/compare.py): win-rates, scorecard
scores, pass rates, pass^k, schema and check pass rates in points, cost per answer (if
uncached) in percent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from evalsite.core.gate_subjects import unknown_subjects
from evalsite.core.report.case_diff import CaseChange, failing_cases, why_failing
from evalsite.core.report.compare import compare_reports
from evalsite.core.report.document import one_contestant
from evalsite.core.report.matrix import matrix_of, pass_share

__all__ = ["GateResult", "check_gates"]


@dataclass(frozen=True)
class GateResult:
    gate: str
    subject: str  # the candidate (or "run")
    status: str  # passed / failed / skipped / not_evaluated
    figure: float | bool | None
    threshold: float | bool | None
    message: str
    measure: str = ""  # what a regression compared: win-rate, pass rate, cost per answer …

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_gates(
    report: Mapping[str, Any],
    gate: Mapping[str, Any],
    pinned: Mapping[str, Any] | None = None,
    *,
    strict: bool = False,
    on_below_floor: str = "flag",
    case_baseline: str = "",
    baseline_changes: Sequence[CaseChange] | str = (),
) -> list[GateResult]:
    """Every gate of `gate` checked on `report`; `pinned` is the pinned baseline run's report.
    `strict` (--strict-gates) fails a gate naming a contestant the run does not have;
    `on_below_floor` is the suite's ``judge.calibration.on_below_floor``; `case_baseline` names
    the run's `--baseline` (each case held against its own baseline, as evalpin does) and
    `baseline_changes` are its cases against the run's (or why they cannot be compared): a
    `baseline` gate fails for each case that is worse or new and not fully passing, and
    `min_pass_all_rate` is skipped with a note."""
    results: list[GateResult] = []
    if on_below_floor == "fail":
        results.append(_floor(report))
    candidates = list(report.get("contestants", []))[1:]
    rates = report.get("win_rates") or {}
    if "min_win_rate_lower_bound" in gate:
        results += _lower_bounds(gate["min_win_rate_lower_bound"], candidates, rates)
    if "max_flip_rate" in gate:
        results += [
            _at_most(
                "max_flip_rate",
                c,
                (rates.get(c) or {}).get("flip_rate"),
                gate["max_flip_rate"],
                "flip rate",
            )  # fmt: skip
            for c in candidates
        ]
    per_contestant = report.get("per_contestant") or {}
    subjects = candidates or list(report.get("contestants", []))  # one model: itself
    for key, part, field, what in (
        ("min_schema_pass_rate", "schema", "rate", "schema pass rate"),
        ("min_check_pass_rate", "checks", "rate", "check pass rate"),
        ("min_pass_all_rate", "pass_k", "pass_all_rate", "share of cases passing every attempt"),
    ):
        if key == "min_pass_all_rate" and key in gate and case_baseline:
            results.append(_held_to_baseline(gate[key], case_baseline))
        elif key in gate:
            results += [
                _at_least(
                    key,
                    c,
                    ((per_contestant.get(c) or {}).get(part) or {}).get(field),
                    gate[key],
                    what,
                )  # fmt: skip
                for c in subjects
            ]
    if case_baseline:
        results += _against_baseline(case_baseline, baseline_changes)
    results += _scorecard_gates(report, gate)
    if "min_best_score" in gate:
        results.append(_best_score(report, gate["min_best_score"]))
    if gate.get("require_headline_eligible"):
        eligible = bool(report.get("headline_eligible"))
        reason = (report.get("calibration") or {}).get("reason", "")
        results.append(
            GateResult(
                "require_headline_eligible",
                "run",
                "passed" if eligible else "failed",
                eligible,
                True,
                "headline-eligible" if eligible else f"not headline-eligible: {reason}",
            )  # fmt: skip
        )
    if "max_regression_points" in gate:
        alpha = gate.get("significance")  # also require the paired interval to exclude 0
        results += _regression(report, pinned, float(gate["max_regression_points"]), alpha)
    return results + _not_evaluated(report, gate, strict)


def _not_evaluated(report: Mapping[str, Any], gate: Mapping[str, Any], strict: bool) -> list[Any]:
    contestants = list(report.get("contestants", []))
    results = []
    for name, subject in unknown_subjects(gate, contestants):
        message = (
            f"{subject}: not a contestant of this run ({', '.join(contestants)}); {name} was "
            "not evaluated for it"
        )
        status = "failed" if strict else "not_evaluated"
        message += " (--strict-gates)" if strict else ""
        results.append(GateResult(name, subject, status, None, gate[name][subject], message))
    return results


def _floor(report: Mapping[str, Any]) -> GateResult:
    """`on_below_floor: fail`: the run fails unless the judge's calibration gate is ok."""
    eligible = bool(report.get("headline_eligible"))
    reason = (report.get("calibration") or {}).get("reason") or "no reason given"
    message = (
        "the judge passes its calibration gate"
        if eligible
        else "the judge is below its calibration floor (judge.calibration.on_below_floor: "
        f"fail): {reason}"
    )
    return GateResult(
        "on_below_floor", "run", "passed" if eligible else "failed", eligible, True, message
    )


def _wanted(threshold: Any, subject: str) -> Any:
    """A gate's threshold for one subject: the number, or its entry in a per-subject map."""
    return threshold.get(subject) if isinstance(threshold, Mapping) else threshold


def _scorecard_gates(report: Mapping[str, Any], gate: Mapping[str, Any]) -> list[GateResult]:
    cells = (report.get("scorecard") or {}).get("cells") or {}
    results = []
    for key, what in (("min_score", "scorecard score"), ("min_pass_rate", "scorecard pass rate")):
        if key not in gate:
            continue
        for contestant in report.get("contestants", []):
            wanted = _wanted(gate[key], contestant)
            if wanted is None:
                continue
            cell = cells.get(contestant) or {}
            figure = cell.get("score") if key == "min_score" else pass_share(cell)
            results.append(_at_least(key, contestant, figure, wanted, what))
    return results


def _best_score(report: Mapping[str, Any], threshold: float) -> GateResult:
    """evalblink's quality gate: the highest score of the run's matrix (each contestant, a
    model with its variant; the scorecard's score, else the pass share) reaches it. Its
    subject is that combination, the first in run order on a tie."""
    matrix, _ = matrix_of(report)  # the report's, or built from its figures as it will be
    cells = [c for c in matrix.get("cells") or () if c.get("score") is not None]
    if not cells:
        return _at_least("min_best_score", "run", None, threshold, "scored combination")
    best = max(cells, key=lambda cell: cell["score"])  # max keeps the first of equals
    result = _at_least(
        "min_best_score", best["contestant"], best["score"], threshold, "score"
    )  # fmt: skip
    return replace(
        result, message=f"best combination {result.message} (of {len(cells)} combinations)"
    )


def _lower_bounds(
    threshold: Any, candidates: list[str], rates: Mapping[str, Any]
) -> list[GateResult]:
    results = []
    for candidate in candidates:
        wanted = _wanted(threshold, candidate)
        if wanted is None:
            continue
        rate = rates.get(candidate) or {}
        ci = rate.get("ci")
        if not ci:
            results.append(
                GateResult(
                    "min_win_rate_lower_bound",
                    candidate,
                    "failed",
                    None,
                    wanted,
                    f"{candidate}: no win-rate interval ({_no_interval(rate)}); the gate "
                    f"needs a lower bound of {wanted:.3f}",
                )  # fmt: skip
            )
            continue
        results.append(_at_least("min_win_rate_lower_bound", candidate, ci[0], wanted,
                                 "win-rate lower bound"))  # fmt: skip
    return results


def _no_interval(rate: Mapping[str, Any]) -> str:
    """Why a win-rate has no interval; a report from before cases were counted says n."""
    return rate.get("no_interval") or f"n={rate.get('n', 0)}, an interval needs 8 judged cases"


def _at_least(
    gate: str, subject: str, figure: float | None, threshold: float, what: str
) -> GateResult:
    if figure is None:
        return GateResult(gate, subject, "failed", None, threshold,
                          f"{subject}: no {what} to check (nothing measured)")  # fmt: skip
    ok = figure >= threshold
    sign = ">=" if ok else "<"
    return GateResult(gate, subject, "passed" if ok else "failed", figure, threshold,
                      f"{subject}: {what} {figure:.3f} {sign} {threshold:.3f}")  # fmt: skip


def _held_to_baseline(threshold: float, case_baseline: str) -> GateResult:
    return GateResult(
        "min_pass_all_rate", "run", "skipped", None, threshold,
        f"replaced by --baseline {case_baseline}: a case fails only when it is worse than "
        "its baseline, or new and not fully passing",
    )  # fmt: skip


def _against_baseline(name: str, changes: Sequence[CaseChange] | str) -> list[GateResult]:
    """evalpin's `--baseline` verdict: a failed result naming each case that is worse or new
    and not fully passing (its share of passed attempts against the baseline's), or one
    passed result for the run; failed, saying why, when the cases cannot be compared."""
    if isinstance(changes, str):
        return [GateResult("baseline", "run", "failed", None, None,
                           f"cannot hold the cases against {name}: {changes}")]  # fmt: skip
    failing = failing_cases(changes)
    if not failing:
        compared = sum(1 for change in changes if change.before and change.after)
        return [GateResult("baseline", "run", "passed", 0, 0,
                           f"no case worse than {name} ({compared} compared)")]  # fmt: skip
    return [
        GateResult(
            "baseline",
            change.key,
            "failed",
            float(change.after.rate) if change.after else None,
            float(change.before.rate) if change.before else None,
            why_failing(change),
        )  # fmt: skip
        for change in failing
    ]


def _at_most(
    gate: str, subject: str, figure: float | None, threshold: float, what: str
) -> GateResult:
    if figure is None:
        return GateResult(gate, subject, "failed", None, threshold,
                          f"{subject}: no {what} to check (no judged pair)")  # fmt: skip
    ok = figure <= threshold
    sign = "<=" if ok else ">"
    return GateResult(gate, subject, "passed" if ok else "failed", figure, threshold,
                      f"{subject}: {what} {figure:.3f} {sign} {threshold:.3f}")  # fmt: skip


def _regression(
    report: Mapping[str, Any],
    pinned: Mapping[str, Any] | None,
    points: float,
    alpha: float | None = None,
) -> list[GateResult]:
    """Every measure of the run against the pinned run's, by the one regression rule that
    `compare --fail-on-regression` applies (Comparison.regressions)."""
    if pinned is None:
        return [
            GateResult("max_regression_points", "run", "skipped", None, points,
                       "no pinned baseline run to compare with (evalsite baseline set RUN)")
        ]  # fmt: skip
    if pinned.get("run_id") == report.get("run_id"):
        return [GateResult("max_regression_points", "run", "skipped", None, points,
                           "this run is the pinned baseline")]  # fmt: skip
    comparison = compare_reports(pinned, report, level=1 - (alpha or 0.05))
    against = f" against the pinned baseline {pinned.get('run_id')}"
    results = [
        GateResult("max_regression_points", r.measure.subject,
                   "failed" if r.regressed else "passed", r.measure.worse(), points,
                   r.text(against), r.measure.measure)
        for r in comparison.regressions(points, alpha)
    ]  # fmt: skip
    results += [
        GateResult("max_regression_points", "run", "skipped", None, points,
                   f"not compared with the pinned baseline {pinned.get('run_id')}: {why}")
        for why in comparison.not_compared
    ]  # fmt: skip
    why = f"the pinned baseline {pinned.get('run_id')}"
    if not comparison.comparable:
        if any(r.subject != "run" for r in results):  # only the win-rates were not
            return [GateResult("max_regression_points", "run", "skipped", None, points,
                               f"win-rates not compared with {why}: {comparison.reason}"),
                    *results]  # fmt: skip
        return [GateResult("max_regression_points", "run", "failed", None, points,
                           f"cannot compare with {why}: {comparison.reason}"),
                *results]  # fmt: skip
    if one_contestant(report):  # nothing to pair: no win-rate to compare
        return [GateResult("max_regression_points", "run", "skipped", None, points,
                           f"win-rates not compared with {why}: one contestant, no win-rates"),
                *results]  # fmt: skip
    return results
