"""Two stored reports of a suite side by side: ``evalsite compare A B`` and the compare page.

Two runs are comparable when they ran the same suite (by name; a changed suite file is
allowed and noted) against the same baseline and share at least one candidate. The
comparison lists, from A to B: each common candidate's overall win-rate, each common
contestant's schema and check pass rates and cost (if uncached: the price of the run's work,
with the spend beside it, so a cached rerun costs what its first run did), and the *movers*:
per (candidate, task) win-rates that changed by at least a threshold, largest change first.

The regression rule (:meth:`Comparison.regressions`) is the one check that ``compare
--fail-on-regression``, the compare page, MCP's compare and the run's
``max_regression_points`` gate apply: every measure both runs have (:class:`Measure`), a
rate that fell by more than the threshold in points (0-100) or a cost per answer that rose
by more than it in percent.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from evalsite.core.report import numbers as num
from evalsite.core.report.document import one_contestant
from evalsite.core.report.matrix import matrix_of, pass_share
from evalsite.core.report.pairing import (
    PARTS,
    below_zero,
    delta_interval,
    paired_changes,
    significance_lines,
)
from evalsite.core.report.text import visible
from evalsite.core.stats.multiple import comparisons_text, holm

__all__ = [
    "DEFAULT_THRESHOLD", "REGRESSION_POINTS", "Change", "Comparison", "Measure", "Mover",
    "Regression", "compare_reports", "mover_test", "regression_points",
]  # fmt: skip

DEFAULT_THRESHOLD = 0.15
DIFFERENT_SUITES = "different suites"
REGRESSION_POINTS = 5.0  # the compare page's and MCP's threshold when none is given
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


COST = "cost per answer if uncached"


@dataclass(frozen=True)
class Measure:
    """One figure of one subject (a candidate's win-rate, a contestant's pass rate, score,
    pass^k, schema or check pass rate, or cost per answer if uncached) in A and in B.
    ``paired`` names its part of the paired figures (``win``, ``score``, ``passed``) when
    it has a significance test."""

    measure: str
    subject: str
    before: float
    after: float
    paired: str = ""

    @property
    def is_cost(self) -> bool:
        return self.measure == COST

    def worse(self) -> float:
        """How much worse B is: points fallen (0-100) for a rate or score, percent risen for
        a cost; negative when it got better."""
        if self.is_cost:  # to 0.01%: below that it is the rounding of the stored costs
            return round((self.after - self.before) / self.before * 100, 2) + 0.0
        # to 0.0001 points: a stored report keeps its rates to 6 digits, a fresh one does not
        return round((self.before - self.after) * 100, 4) + 0.0


@dataclass(frozen=True)
class Regression:
    """A measure checked against the threshold: ``regressed`` when it got worse by more
    than ``threshold`` (and, with a significance level, its paired test says so too)."""

    measure: Measure
    threshold: float
    regressed: bool
    note: str = ""  # what the significance test said, "" without one

    def figures(self) -> str:
        m = self.measure
        if m.is_cost:
            return f"{m.measure} {num.money(m.before)} -> {num.money(m.after)}"
        return f"{m.measure} {m.before:.3f} -> {m.after:.3f}"

    def verdict(self) -> str:
        worse, limit = self.measure.worse(), f"{self.threshold:g}"
        past = "more than" if worse > self.threshold else "within"
        if self.measure.is_cost:
            return f"{'up' if worse > 0 else 'down'} {abs(worse):.1f}% ({past} {limit}%)"
        return f"{'down' if worse > 0 else 'up'} {abs(worse):.1f} points ({past} {limit})"

    def text(self, against: str = "") -> str:
        """``subject: measure before -> after[ against], down X points (more than N)``."""
        return f"{self.measure.subject}: {self.figures()}{against}, {self.verdict()}{self.note}"

    def to_dict(self) -> dict[str, Any]:
        m = self.measure
        return {
            "measure": m.measure,
            "subject": m.subject,
            "before": m.before,
            "after": m.after,
            "worse": m.worse(),
            "unit": "percent" if m.is_cost else "points",
            "threshold": self.threshold,
            "regressed": self.regressed,
            "text": self.text(),
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
    cost_total: Change | None = None  # if uncached: the price of the run's work
    cost: tuple[Change, ...] = ()
    spend_total: Change | None = None  # what the run spent (a cache hit spends nothing)
    spend: tuple[Change, ...] = ()
    significance: Mapping[str, Any] | None = None  # paired_changes(A, B); None: no units
    comparisons: int = 0  # per-task win-rate changes tested, the family Holm corrects
    measures: tuple[Measure, ...] = ()  # every figure the regression rule checks
    not_compared: tuple[str, ...] = ()  # measures left out, and why

    def regressions(self, points: float, alpha: float | None = None) -> list[Regression]:
        """Every measure both runs have, checked against ``points``: a rate or score that
        fell by more than ``points`` percentage points (0-100), or a cost per answer (if
        uncached) that rose by more than ``points`` percent. With ``alpha``, a drop with a
        paired test fails only when the test says it is significant at that level (the
        win-rate's and score's paired interval wholly below 0, the pass rate's p below
        ``alpha``); a measure without one is decided by the points alone, and says so."""
        results = []
        for measure in self.measures:
            past = measure.worse() > points
            significant, note = self._significant(measure, alpha)
            results.append(Regression(measure, points, past and significant, note))
        return results

    def _significant(self, measure: Measure, alpha: float | None) -> tuple[bool, str]:
        if alpha is None:
            return True, ""
        if measure.paired == "passed":
            test = delta_interval(self.significance, "passed", measure.subject) or {}
            p_value = test.get("p_value")
            if not test.get("n") or p_value is None:
                return True, "; no paired test, so significance is not tested"
            ok = p_value < alpha and (test.get("delta") or 0) < 0
            words = f"< {alpha:g}" if ok else f">= {alpha:g} or no drop: not significant"
            return ok, f"; p={p_value:.3g} ({test.get('test', 'McNemar exact')}) {words}"
        below = below_zero(self.significance, measure.paired, measure.subject)
        if not measure.paired or below is None:
            what = "interval" if measure.paired else "test"
            return True, f"; no paired {what}, so significance is not tested"
        ci = delta_interval(self.significance, measure.paired, measure.subject)["ci"]
        words = "excludes 0" if below or ci[0] > 0 else "includes 0: not significant"
        return below, f"; paired {1 - alpha:.0%} interval {num.signed_interval(ci)} {words}"

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
            "spend_total": self.spend_total.to_dict() if self.spend_total else None,
            "spend": [change.to_dict() for change in self.spend],
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
        lines += [
            f"  {m.measure} {visible(m.subject)}: {_rates(Change(m.subject, m.before, m.after))}"
            for m in self.measures
            if m.measure in ("scorecard score", "pass rate") or m.measure.startswith("pass^")
        ]  # the rest of the measures the regression rule reads have lines of their own
        spent = {change.name: change for change in self.spend}
        if self.cost_total:
            lines.append(f"  cost total: {_money(self.cost_total, self.spend_total)}")
        lines += [f"  cost {visible(c.name)}: {_money(c, spent.get(c.name))}" for c in self.cost]
        lines += [f"  not compared: {visible(why)}" for why in self.not_compared]
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


def _money(cost: Change, spend: Change | None = None) -> str:
    """The cost if uncached and its change; the spend beside it."""
    before, after = num.money(cost.before), num.money(cost.after)
    text = f"if uncached {before} \u2192 {after} ({num.signed_money(cost.delta)})"
    if spend is None:
        return text
    return f"{text}; spent {num.money(spend.before)} \u2192 {num.money(spend.after)}"


def compare_reports(
    a: Report,
    b: Report,
    *,
    threshold: float | None = None,
    level: float = 0.95,
    parts: Collection[str] = PARTS,
) -> Comparison:
    """A (the earlier run) against B. ``threshold`` for movers: B's suite's
    ``mover_threshold``, else :data:`DEFAULT_THRESHOLD`; ``level`` for the paired
    intervals; ``parts``, the paired changes tested (:func:`paired_changes`: the movers and
    their Holm family read only ``"win"``)."""
    suite = b.get("suite") or {}
    if threshold is None:
        threshold = suite.get("mover_threshold")
    threshold = DEFAULT_THRESHOLD if threshold is None else float(threshold)
    a_id, b_id, name = str(a.get("run_id") or ""), str(b.get("run_id") or ""), suite.get("name")
    reason = _not_comparable(a, b)
    if reason.startswith(DIFFERENT_SUITES):
        return Comparison(a_id, b_id, str(name or ""), False, reason, threshold=threshold)
    candidates = [c for c in _candidates(b) if c in _candidates(a)]
    both = [c for c in _contestants(b) if c in _contestants(a)]
    paired = paired_changes(a, b, level=level, parts=parts)
    measures, not_compared = _measures(a, b, [] if reason else candidates, both)
    if reason:  # the win-rates are not comparable; each contestant's own measures are
        return Comparison(
            a_id, b_id, str(name or ""), False, reason, threshold=threshold,
            significance=paired, measures=measures, not_compared=not_compared,
        )  # fmt: skip
    eligible = a.get("headline_eligible") is True and b.get("headline_eligible") is True
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
        schema_pass=_rate_changes(a, b, both, "schema"),
        check_pass=_rate_changes(a, b, both, "checks"),
        cost_total=Change(
            "total", _total(a, "cost_if_uncached_usd"), _total(b, "cost_if_uncached_usd")
        ),
        cost=tuple(
            Change(c, _cost(a, c, "if_uncached_usd"), _cost(b, c, "if_uncached_usd")) for c in both
        ),
        spend_total=Change("total", _total(a, "cost_usd"), _total(b, "cost_usd")),
        spend=tuple(Change(c, _cost(a, c, "usd"), _cost(b, c, "usd")) for c in both),
        significance=paired,
        comparisons=len(tests),
        measures=measures,
        not_compared=not_compared,
    )


def _measures(
    a: Report, b: Report, candidates: list[str], both: list[str]
) -> tuple[tuple[Measure, ...], tuple[str, ...]]:
    """Every figure both runs have, a measure at a time: each common candidate's win-rate,
    then each common contestant's scorecard score (the matrix cell's score, when a
    scorecard weighs it), pass rate (passed / scored, the matrix's), pass^k (with repeats,
    the same k in both), schema and check pass rates and cost per answer if uncached (when
    A's is priced). Scores and pass rates under another scorecard measure something else:
    left out, and said so."""
    found: list[Measure] = []

    def add(measure: str, subject: str, before: Any, after: Any, paired: str = "") -> None:
        if before is not None and after is not None:
            found.append(Measure(measure, subject, float(before), float(after), paired))

    if b.get("judge"):
        for candidate in candidates:
            add("win-rate", candidate, _win_rate(a, candidate), _win_rate(b, candidate), "win")
    cells_a, cells_b = _cells(a), _cells(b)
    same_scorecard = _criteria(a) == _criteria(b)
    not_compared = () if same_scorecard else (
        "scorecard scores and pass rates: the earlier run has another scorecard",
    )  # fmt: skip
    if same_scorecard and _criteria(b):
        for c in both:
            add("scorecard score", c, cells_a[c].get("score"), cells_b[c].get("score"), "score")
    if same_scorecard:
        for c in both:
            add("pass rate", c, pass_share(cells_a[c]), pass_share(cells_b[c]), "passed")
    for c in both:
        k_a, k_b = (_pass_k(r, c) for r in (a, b))
        if k_a.get("k") == k_b.get("k") and (k_a.get("k") or 0) > 1:
            add(f"pass^{k_b['k']}", c, k_a.get("pass_all_rate"), k_b.get("pass_all_rate"))
    for part, what in (("schema", "schema pass"), ("checks", "check pass")):
        for c in both:
            add(what, c, _rate(a, c, part), _rate(b, c, part))
    for c in both:
        before = _cost(a, c, "per_1k_calls_usd")
        if before:  # a cost that was 0 (unpriced) has no percent to rise by
            add(COST, c, before / 1000, _per_answer(b, c))
    return tuple(found), not_compared


def _cells(report: Report) -> dict[str, dict[str, Any]]:
    cells = {cell["contestant"]: cell for cell in matrix_of(report)[0].get("cells") or ()}
    return {c: cells.get(c) or {} for c in _contestants(report)}


def _criteria(report: Report) -> Any:
    return (report.get("scorecard") or {}).get("criteria") or None


def _pass_k(report: Report, contestant: str) -> Mapping[str, Any]:
    card = (report.get("per_contestant") or {}).get(contestant) or {}
    return card.get("pass_k") or {}


def _per_answer(report: Report, contestant: str) -> float | None:
    per_1k = _cost(report, contestant, "per_1k_calls_usd")
    return None if per_1k is None else per_1k / 1000


def regression_points(given: Any) -> tuple[float, str]:
    """The regression threshold a page or tool was given (points 0-100), else
    :data:`REGRESSION_POINTS`; and what is wrong with what was given ("" when nothing)."""
    if given is None or given == "":
        return REGRESSION_POINTS, ""
    try:
        points = float(given)
    except (TypeError, ValueError):
        points = -1.0
    if not 0 <= points <= 100:  # also NaN
        return REGRESSION_POINTS, (
            f"the regression threshold takes points from 0 to 100, not {str(given)[:40]!r}; "
            f"showing {REGRESSION_POINTS:g}"
        )
    return points, ""


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


def _tested(
    mover: Mover, adjusted: Mapping[tuple[str, str], tuple[Any, ...]], level: float
) -> Mover:
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
        return f"{DIFFERENT_SUITES}: {name_a} vs {name_b}"
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


def _rate_changes(a: Report, b: Report, names: Iterable[str], part: str) -> tuple[Change, ...]:
    """Each contestant's change of one rate; none for a contestant with no rate in either run
    (no answer had a schema, or a check)."""
    changes = (Change(c, _rate(a, c, part), _rate(b, c, part)) for c in names)
    return tuple(c for c in changes if c.before is not None or c.after is not None)


def _rate(report: Report, contestant: str, part: str) -> float | None:
    card = (report.get("per_contestant") or {}).get(contestant) or {}
    return (card.get(part) or {}).get("rate")


def _cost(report: Report, contestant: str, key: str) -> float | None:
    card = (report.get("per_contestant") or {}).get(contestant) or {}
    return (card.get("cost") or {}).get(key)


def _total(report: Report, key: str) -> float | None:
    return (report.get("totals") or {}).get(key)


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
                # a delta only between two win-rates: old and new are numbers here
                movers.append(
                    Mover(candidate, str(task), cast(float, old), cast(float, new), delta)
                )
    return tuple(sorted(movers, key=lambda mover: -abs(mover.delta)))
