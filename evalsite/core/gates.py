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
`max_regression_points` also compares each contestant's scorecard score with the pinned
run's, in percentage points, when both runs have a score for it under the same scorecard.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from evalsite.core.report.compare import compare_reports
from evalsite.core.report.document import one_contestant
from evalsite.core.report.matrix import matrix_of
from evalsite.core.report.numbers import signed_interval
from evalsite.core.report.pairing import below_zero, delta_interval

__all__ = ["GateResult", "check_gates"]


@dataclass(frozen=True)
class GateResult:
    gate: str
    subject: str  # the candidate (or "run")
    status: str  # passed / failed / skipped
    figure: float | bool | None
    threshold: float | bool | None
    message: str

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_gates(
    report: Mapping[str, Any],
    gate: Mapping[str, Any],
    pinned: Mapping[str, Any] | None = None,
) -> list[GateResult]:
    """Every gate of `gate` checked on `report`; `pinned` is the pinned baseline run's report."""
    results: list[GateResult] = []
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
        if key in gate:
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
    return results


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
            figure = cell.get("score") if key == "min_score" else _pass_rate(cell)
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


def _pass_rate(cell: Mapping[str, Any]) -> float | None:
    return cell["passed"] / cell["scored"] if cell.get("scored") else None


def _lower_bounds(threshold: Any, candidates: list[str], rates: Mapping) -> list[GateResult]:
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


def _at_least(gate: str, subject: str, figure, threshold, what: str) -> GateResult:
    if figure is None:
        return GateResult(gate, subject, "failed", None, threshold,
                          f"{subject}: no {what} to check (nothing measured)")  # fmt: skip
    ok = figure >= threshold
    sign = ">=" if ok else "<"
    return GateResult(gate, subject, "passed" if ok else "failed", figure, threshold,
                      f"{subject}: {what} {figure:.3f} {sign} {threshold:.3f}")  # fmt: skip


def _at_most(gate: str, subject: str, figure, threshold, what: str) -> GateResult:
    if figure is None:
        return GateResult(gate, subject, "failed", None, threshold,
                          f"{subject}: no {what} to check (no judged pair)")  # fmt: skip
    ok = figure <= threshold
    sign = "<=" if ok else ">"
    return GateResult(gate, subject, "passed" if ok else "failed", figure, threshold,
                      f"{subject}: {what} {figure:.3f} {sign} {threshold:.3f}")  # fmt: skip


def _regression(report, pinned, points: float, alpha: float | None = None) -> list[GateResult]:
    if pinned is None:
        return [
            GateResult("max_regression_points", "run", "skipped", None, points,
                       "no pinned baseline run to compare with (evalsite baseline set RUN)")
        ]  # fmt: skip
    if pinned.get("run_id") == report.get("run_id"):
        return [GateResult("max_regression_points", "run", "skipped", None, points,
                           "this run is the pinned baseline")]  # fmt: skip
    comparison = compare_reports(pinned, report, level=1 - (alpha or 0.05))
    significant = _significance(comparison.significance, alpha)
    scores = _score_regression(report, pinned, points, significant)
    if not comparison.comparable:
        why = f"the pinned baseline {pinned.get('run_id')}: {comparison.reason}"
        if any(result.subject != "run" for result in scores):  # only win-rates were not
            return [GateResult("max_regression_points", "run", "skipped", None, points,
                               f"win-rates not compared with {why}"), *scores]  # fmt: skip
        return [GateResult("max_regression_points", "run", "failed", None, points,
                           f"cannot compare with {why}"), *scores]  # fmt: skip
    if one_contestant(report):  # nothing to pair: no win-rate to compare
        why = f"the pinned baseline {pinned.get('run_id')}: one contestant, no win-rates"
        return [GateResult("max_regression_points", "run", "skipped", None, points,
                           f"win-rates not compared with {why}"), *scores]  # fmt: skip
    return _win_rate_regression(comparison, pinned, points, significant) + scores


def _significance(paired, alpha: float | None):
    """With `significance: alpha`, a function of (part, name) giving whether the paired
    interval at 1 - alpha lies below 0 (True / False) and the words saying so; without it,
    None: a drop past the points fails on its own."""
    if alpha is None:
        return None

    def significant(part: str, name: str) -> tuple[bool, str]:
        below = below_zero(paired, part, name)
        if below is None:
            return True, "; no paired interval, so significance is not tested"
        ci = delta_interval(paired, part, name)["ci"]
        words = "excludes 0" if below or ci[0] > 0 else "includes 0: not significant"
        return below, f"; paired {1 - alpha:.0%} interval {signed_interval(ci)} {words}"

    return significant


def _win_rate_regression(comparison, pinned, points: float, significant=None) -> list[GateResult]:
    regressed = set(comparison.regression(points, significant=significant is not None))
    results = []
    for change in comparison.win_rates:
        if change.delta is None:
            continue
        fell = -change.delta * 100
        note = significant("win", change.name)[1] if significant else ""
        failed = change.name in regressed
        results.append(
            GateResult(
                "max_regression_points",
                change.name,
                "failed" if failed else "passed",
                round(fell, 6),
                points,
                f"{change.name}: win-rate {change.before:.3f} -> {change.after:.3f} against the "
                f"pinned baseline {pinned.get('run_id')}, "
                f"{'down' if fell > 0 else 'up'} {abs(fell):.1f} points "
                f"({'more than' if round(fell, 9) > points else 'within'} {points:g}){note}",
            )  # fmt: skip
        )
    return results


def _score_regression(report, pinned, points: float, significant=None) -> list[GateResult]:
    """Each contestant's scorecard score against the pinned run's, when both have one under
    the same scorecard (another scorecard scores something else). Without a scorecard the
    cell score is the pass share, which this gate has never compared: nothing to do."""
    now, before = report.get("scorecard") or {}, pinned.get("scorecard") or {}
    if not now.get("criteria") or not before:
        return []
    if now.get("criteria") != before.get("criteria"):
        return [GateResult("max_regression_points", "run", "skipped", None, points,
                           f"scorecard scores not compared: the pinned baseline "
                           f"{pinned.get('run_id')} has another scorecard")]  # fmt: skip
    results = []
    for contestant, cell in (now.get("cells") or {}).items():
        old = ((before.get("cells") or {}).get(contestant) or {}).get("score")
        new = cell.get("score")
        if old is None or new is None:
            continue
        fell = round((old - new) * 100, 9)
        below, note = significant("score", contestant) if significant else (True, "")
        failed = fell > points and below
        results.append(
            GateResult(
                "max_regression_points",
                contestant,
                "failed" if failed else "passed",
                round(fell, 6),
                points,
                f"{contestant}: scorecard score {old:.3f} -> {new:.3f} against the pinned "
                f"baseline {pinned.get('run_id')}, {'down' if fell > 0 else 'up'} "
                f"{abs(fell):.1f} points ({'more than' if fell > points else 'within'} "
                f"{points:g}){note}",
            )  # fmt: skip
        )
    return results
