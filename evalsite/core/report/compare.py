"""Two stored reports of a suite side by side: ``evalsite compare A B`` and the compare page.

Two runs are comparable when they ran the same suite (by name; a changed suite file is
allowed and noted) against the same baseline and share at least one candidate. The
comparison lists, from A to B: each common candidate's overall win-rate, each common
contestant's schema and check pass rates and cost, and the *movers*: per (candidate,
task) win-rates that changed by at least a threshold, largest change first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.document import one_contestant
from evalsite.core.report.pairing import (
    below_zero,
    delta_interval,
    paired_changes,
    significance_lines,
)
from evalsite.core.report.text import visible
from evalsite.core.stats.multiple import comparisons_text, holm

__all__ = ["DEFAULT_THRESHOLD", "Change", "Comparison", "Mover", "compare_reports", "mover_test"]

DEFAULT_THRESHOLD = 0.15
Report = Mapping[str, Any]


def _delta(before: float | None, after: float | None) -> float | None:
    # Rounded so that 0.60 - 0.45 is 0.15 and meets a 0.15 threshold.
    return None if before is None or after is None else round(after - before, 9)


@dataclass(frozen=True)
class Change:
    """One figure in A and in B; None where a run lacks it."""

    name: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        return _delta(self.before, self.after)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "before": self.before, "after": self.after, "delta": self.delta}


@dataclass(frozen=True)
class Mover:
    candidate: str
    task: str
    before: float
    after: float
    delta: float
    ci: tuple[float, float] | None = None  # paired bootstrap of the change (pairing.py)
    paired_n: int = 0  # units both runs judged
    p_value: float | None = None  # the paired bootstrap's, alone
    p_holm: float | None = None  # Holm-adjusted over every task and candidate tested
    significant: bool | None = None  # p_holm below 1 - level; None: not tested

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "task": self.task,
            "before": self.before,
            "after": self.after,
            "delta": self.delta,
            "ci": list(self.ci) if self.ci else None,
            "paired_n": self.paired_n,
            "p_value": self.p_value,
            "p_holm": self.p_holm,
            "significant": self.significant,
        }


@dataclass(frozen=True)
class Comparison:
    a: str  # run ids
    b: str
    suite: str
    comparable: bool
    reason: str = ""  # why not comparable
    notes: tuple[str, ...] = ()
    baseline: str = ""
    threshold: float = DEFAULT_THRESHOLD
    uncalibrated: bool = False  # a win-rate of A or B is not headline-eligible
    movers: tuple[Mover, ...] = ()
    win_rates: tuple[Change, ...] = ()
    schema_pass: tuple[Change, ...] = ()
    check_pass: tuple[Change, ...] = ()
    cost_total: Change | None = None
    cost: tuple[Change, ...] = ()
    significance: Mapping[str, Any] | None = None  # paired_changes(A, B); None: no units
    comparisons: int = 0  # per-task win-rate changes tested, the family Holm corrects

    def regression(self, points: float, *, significant: bool = False) -> list[str]:
        """The candidates whose overall win-rate fell by more than ``points`` percentage
        points (0–100) from A to B. Empty when the runs are not comparable. With
        ``significant``, only those whose paired interval (at this comparison's level) lies
        below 0; where there is no interval the points decide alone."""
        return [
            change.name
            for change in self.win_rates
            if change.delta is not None
            and round(-change.delta * 100, 9) > points
            and not (significant and below_zero(self.significance, "win", change.name) is False)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "suite": self.suite,
            "comparable": self.comparable,
            "reason": self.reason,
            "notes": list(self.notes),
            "baseline": self.baseline,
            "threshold": self.threshold,
            "uncalibrated": self.uncalibrated,
            "movers": [mover.to_dict() for mover in self.movers],
            "win_rates": [change.to_dict() for change in self.win_rates],
            "schema_pass": [change.to_dict() for change in self.schema_pass],
            "check_pass": [change.to_dict() for change in self.check_pass],
            "cost_total": self.cost_total.to_dict() if self.cost_total else None,
            "cost": [change.to_dict() for change in self.cost],
            "significance": self.significance,
            "comparisons": self.comparisons,
        }

    def lines(self) -> list[str]:
        """The comparison for a terminal, one figure a line."""
        lines = [f"compare {visible(self.a)} \u2192 {visible(self.b)}  ({visible(self.suite)})"]
        if not self.comparable:
            return [*lines, f"  not comparable: {visible(self.reason)}"]
        lines += [f"  note: {visible(note)}" for note in self.notes]
        flag = " (UNCALIBRATED)" if self.uncalibrated else ""
        for change in self.win_rates:
            lines.append(
                f"  {visible(change.name)} vs {visible(self.baseline)}: win-rate "
                f"{_rates(change)}{flag}"
            )
        lines += [f"  schema pass {visible(c.name)}: {_rates(c)}" for c in self.schema_pass]
        lines += [f"  check pass {visible(c.name)}: {_rates(c)}" for c in self.check_pass]
        if self.cost_total:
            lines.append(f"  cost total: {_money(self.cost_total)}")
        lines += [f"  cost {visible(c.name)}: {_money(c)}" for c in self.cost]
        lines += [visible(line) for line in significance_lines(self.significance)]
        family = f"; {comparisons_text(self.comparisons)}" if self.comparisons else ""
        movers = (
            f"  movers (per-task win-rate change of {num.rate(self.threshold)} or more{family})"
        )
        if not self.movers:
            return [*lines, f"{movers}: none"]
        lines.append(f"{movers}:")
        for m in self.movers:
            lines.append(
                f"    {visible(m.candidate)} / {visible(m.task)}: {num.rate(m.before)} \u2192 "
                f"{num.rate(m.after)} ({num.signed_rate(m.delta)}{_paired(m)}){flag}"
            )
        return lines


def _paired(mover: Mover) -> str:
    text = mover_test(mover.to_dict())
    return f", {text}" if text else ""


def mover_test(mover: Mapping[str, Any]) -> str:
    """A mover's paired interval and its Holm verdict (a mover's ``to_dict``, as compare
    and the run report keep it): 'paired [+0.10, +0.40] n=20, not significant after Holm,
    Holm p=0.240'; empty without paired units."""
    if not mover.get("paired_n"):
        return ""
    text = f"paired {num.signed_interval(mover.get('ci'))} n={mover['paired_n']}"
    if mover.get("significant") is None:
        return text
    verdict = "" if mover["significant"] else "not significant after Holm, "
    return f"{text}, {verdict}Holm p={mover['p_holm']:.3f}"


def _rates(change: Change) -> str:
    before, after = num.rate(change.before), num.rate(change.after)
    return f"{before} \u2192 {after} ({num.signed_rate(change.delta)})"


def _money(change: Change) -> str:
    before, after = num.money(change.before), num.money(change.after)
    return f"{before} \u2192 {after} ({num.signed_money(change.delta)})"


def compare_reports(
    a: Report, b: Report, *, threshold: float | None = None, level: float = 0.95
) -> Comparison:
    """A (the earlier run) against B. ``threshold`` for movers: B's suite's
    ``mover_threshold``, else :data:`DEFAULT_THRESHOLD`; ``level`` for the paired
    intervals."""
    suite = b.get("suite") or {}
    if threshold is None:
        threshold = suite.get("mover_threshold")
    threshold = DEFAULT_THRESHOLD if threshold is None else float(threshold)
    a_id, b_id, name = str(a.get("run_id") or ""), str(b.get("run_id") or ""), suite.get("name")
    reason = _not_comparable(a, b)
    if reason:
        return Comparison(a_id, b_id, str(name or ""), False, reason, threshold=threshold)
    candidates = [c for c in _candidates(b) if c in _candidates(a)]
    both = [c for c in _contestants(b) if c in _contestants(a)]
    eligible = a.get("headline_eligible") is True and b.get("headline_eligible") is True
    paired = paired_changes(a, b, level=level)
    tests = _task_tests(paired, candidates)
    pvalues = list(tests.values())
    adjusted = dict(zip(tests, zip(pvalues, holm(pvalues), strict=True), strict=True))
    movers = _movers(a, b, candidates, threshold)
    return Comparison(
        a_id,
        b_id,
        str(name or ""),
        True,
        notes=tuple(_notes(a, b)),
        baseline=_baseline(b),
        threshold=threshold,
        uncalibrated=not eligible,
        movers=tuple(_tested(_interval(m, paired), adjusted, level) for m in movers),
        win_rates=tuple(
            Change(c, _win_rate(a, c), _win_rate(b, c)) for c in candidates if b.get("judge")
        ),
        schema_pass=tuple(Change(c, _rate(a, c, "schema"), _rate(b, c, "schema")) for c in both),
        check_pass=tuple(Change(c, _rate(a, c, "checks"), _rate(b, c, "checks")) for c in both),
        cost_total=Change("total", _total_cost(a), _total_cost(b)),
        cost=tuple(Change(c, _cost(a, c), _cost(b, c)) for c in both),
        significance=paired,
        comparisons=len(tests),
    )


def _interval(mover: Mover, paired: Mapping[str, Any] | None) -> Mover:
    delta = delta_interval(paired, "win", mover.candidate, mover.task) or {}
    ci = tuple(delta["ci"]) if delta.get("ci") else None
    return replace(mover, ci=ci, paired_n=delta.get("n") or 0)


def _task_tests(
    paired: Mapping[str, Any] | None, candidates: list[str]
) -> dict[tuple[str, str], float]:
    """The family of per-task win-rate changes tested: (candidate, task) -> the paired
    bootstrap's p, every task with an interval, moved or not (choosing the movers first
    and correcting only those would hide the comparisons that chose them)."""
    return {
        (candidate, task): delta["p_value"]
        for candidate in candidates
        for task, delta in (
            (((paired or {}).get("win") or {}).get(candidate) or {}).get("tasks") or {}
        ).items()
        if delta.get("p_value") is not None
    }


def _tested(mover: Mover, adjusted: Mapping[tuple[str, str], tuple], level: float) -> Mover:
    """The mover with its p alone and after Holm; a mover with no test is left as it is."""
    if (mover.candidate, mover.task) not in adjusted:
        return mover
    p_value, p_holm = adjusted[mover.candidate, mover.task]
    return replace(mover, p_value=p_value, p_holm=p_holm, significant=p_holm < 1 - level)


def _contestants(report: Report) -> list[str]:
    return [str(name) for name in report.get("contestants") or ()]


def _baseline(report: Report) -> str:
    contestants = _contestants(report)
    return str(report.get("baseline") or (contestants[0] if contestants else ""))


def _candidates(report: Report) -> list[str]:
    return [name for name in _contestants(report) if name != _baseline(report)]


def _not_comparable(a: Report, b: Report) -> str:
    name_a = (a.get("suite") or {}).get("name")
    name_b = (b.get("suite") or {}).get("name")
    if name_a != name_b:
        return f"different suites: {name_a} vs {name_b}"
    if _baseline(a) != _baseline(b):
        return f"different baselines: {_baseline(a)} vs {_baseline(b)}"
    single = one_contestant(a) and one_contestant(b)  # the baseline is compared
    if not single and not set(_candidates(a)) & set(_candidates(b)):
        return "no candidate in common"
    return ""


def _notes(a: Report, b: Report) -> list[str]:
    notes = []
    hash_a, hash_b = ((r.get("suite") or {}).get("hash") or "" for r in (a, b))
    if hash_a != hash_b:
        notes.append(f"suite changed: hash {hash_a[:12]} \u2192 {hash_b[:12]}")
    judge_a, judge_b = ((r.get("judge") or {}).get("model") or "none" for r in (a, b))
    if judge_a != judge_b:
        notes.append(f"judge changed: {judge_a} \u2192 {judge_b}")
    table_a, table_b = (_price_table(r) for r in (a, b))
    if table_a != table_b:
        notes.append(f"price table changed: {table_a} \u2192 {table_b}")
    if a.get("repeats") != b.get("repeats"):
        notes.append(f"repeats changed: {a.get('repeats')} \u2192 {b.get('repeats')}")
    for name, here, there in (("A", a, b), ("B", b, a)):
        only = [c for c in _candidates(here) if c not in _candidates(there)]
        if only:
            notes.append(f"only in {name}: {', '.join(only)}")
    for name, report in (("A", a), ("B", b)):
        if report.get("judge") and report.get("headline_eligible") is not True:
            status = (report.get("calibration") or {}).get("status") or "unknown"
            notes.append(f"win-rates of {name} are UNCALIBRATED ({status})")
    return notes


def _price_table(report: Report) -> str:
    table = report.get("price_table") or {}
    return f"{table.get('name')} pinned {table.get('pinned')}"


def _win_rate(report: Report, candidate: str) -> float | None:
    return ((report.get("win_rates") or {}).get(candidate) or {}).get("win_rate")


def _rate(report: Report, contestant: str, part: str) -> float | None:
    card = (report.get("per_contestant") or {}).get(contestant) or {}
    return (card.get(part) or {}).get("rate")


def _cost(report: Report, contestant: str) -> float | None:
    card = (report.get("per_contestant") or {}).get(contestant) or {}
    return (card.get("cost") or {}).get("usd")


def _total_cost(report: Report) -> float | None:
    return (report.get("totals") or {}).get("cost_usd")


def _task_win_rates(report: Report) -> dict[str, Mapping[str, Any]]:
    return {row.get("task"): row.get("win_rates") or {} for row in report.get("per_task") or ()}


def _movers(a: Report, b: Report, candidates: list[str], threshold: float) -> tuple[Mover, ...]:
    before, after = _task_win_rates(a), _task_win_rates(b)
    movers = []
    for candidate in candidates:
        for task, rates in after.items():
            old = (before.get(task, {}).get(candidate) or {}).get("win_rate")
            new = (rates.get(candidate) or {}).get("win_rate")
            delta = _delta(old, new)
            if delta is not None and abs(delta) >= threshold:
                movers.append(Mover(candidate, str(task), old, new, delta))
    return tuple(sorted(movers, key=lambda mover: -abs(mover.delta)))
