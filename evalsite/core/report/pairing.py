"""Two runs of a suite compared unit by unit: the report's ``paired`` key and the paired
significance of ``compare A B`` and the regression gate (§15).

A unit is a (task, case, repeat). Each report keeps, per unit, each candidate's pair score
and each contestant's scorecard score and attempt pass (``paired``); comparing two reports pairs
the units both have, so a case that is hard in both runs cancels out of the change.
Reports written before this key have no units and get no significance (said so).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.scoring.scorecard import CaseScore, score_answer
from evalsite.core.stats.bootstrap import seed_from
from evalsite.core.stats.mcnemar import case_mcnemar
from evalsite.core.stats.paired import paired_bootstrap

__all__ = [
    "PARTS", "below_zero", "delta_interval", "paired_changes", "paired_units",
    "significance_lines",
]  # fmt: skip

Report = Mapping[str, Any]
Unit = tuple[str, str, int]
PARTS = ("win", "score", "passed")  # Δ win-rate, Δ scorecard score, Δ pass rate


def paired_units(data: Any, cards: Sequence[CaseScore] | None = None) -> dict[str, Any]:
    """The ``paired`` key of a report built from ``data`` (a ReportInput): ``units`` lists
    every (task, case, repeat) answered; ``win``, ``score`` and ``passed`` hold, per
    candidate or contestant, one value per unit (None where it has none). ``passed`` is the
    attempt's pass (an answer that errored is a failed attempt), as pass^k, the pass rate
    and the per-case diff count it; ``score`` is the scorecard's (`cards`: each answer's,
    when the caller has them)."""
    if cards is None:
        cards = [score_answer(data.scorecard, answer) for answer in data.answers]
    keys = sorted({(a.task, a.case, a.repeat) for a in data.answers})
    index = {key: i for i, key in enumerate(keys)}

    def column() -> list[Any]:
        return [None] * len(keys)

    win: dict[str, list[Any]] = defaultdict(column)
    for p in data.pairs:
        unit = (p.task, p.case, p.repeat)
        judged = not p.excluded_reason and p.score is not None
        if p.baseline == data.contestants[0] and judged and unit in index:
            win[p.candidate][index[unit]] = p.score
    score: dict[str, list[Any]] = defaultdict(column)
    passed: dict[str, list[Any]] = defaultdict(column)
    for answer, case in zip(data.answers, cards, strict=True):
        at = index[answer.task, answer.case, answer.repeat]
        passed[answer.contestant][at] = answer.effective_pass  # the one rule; an error fails
        if case.score is not None:
            score[answer.contestant][at] = case.score
    return {
        "units": [list(key) for key in keys],
        "win": dict(win),
        "score": dict(score),
        "passed": dict(passed),
    }


def paired_changes(
    a: Report, b: Report, *, level: float = 0.95, parts: Collection[str] = PARTS
) -> dict[str, Any] | None:
    """From A to B, per candidate and per task: Δ win-rate and, per contestant, Δ scorecard
    score with seeded paired bootstrap intervals at ``level`` (units paired by case and
    repeat, resampled a case at a time), and Δ pass rate with its exact p over cases
    (McNemar's with one repeat, the sign-flip test over cases with more). Only the
    ``parts`` named (of :data:`PARTS`); each part's figures are the same whichever others
    are asked for. None when either report has no ``paired`` key."""
    units_a, units_b = _columns(a), _columns(b)
    if units_a is None or units_b is None:
        return None
    seed = seed_from(f"{a.get('run_id')}:{b.get('run_id')}")
    result: dict[str, Any] = {"level": level, "seed": seed}

    def bootstrap(before: list[Any], after: list[Any], units: list[Unit]) -> dict[str, Any]:
        cases = [unit[:2] for unit in units]  # a case's repeats are resampled together
        return paired_bootstrap(before, after, seed=seed, clusters=cases, level=level).to_dict()

    def mcnemar(before: list[Any], after: list[Any], units: list[Unit]) -> dict[str, Any]:
        return case_mcnemar(before, after, [unit[:2] for unit in units]).to_dict()

    for part in PARTS:
        if part in parts:
            test = mcnemar if part == "passed" else bootstrap
            result[part] = {
                name: _by_task(units_a[part][name], units, test)
                for name, units in units_b[part].items()
                if name in units_a[part]
            }
    return result


def _columns(report: Report) -> dict[str, dict[str, dict[Unit, Any]]] | None:
    paired = report.get("paired")
    if not paired:
        return None
    units = [tuple(unit) for unit in paired.get("units") or ()]
    return {
        part: {name: _present(units, values) for name, values in (paired.get(part) or {}).items()}
        for part in PARTS
    }


def _present(units: list[Unit], values: list[Any]) -> dict[Unit, Any]:
    return {unit: value for unit, value in zip(units, values, strict=False) if value is not None}


def _by_task(
    before: Mapping[Unit, Any],
    after: Mapping[Unit, Any],
    test: Callable[[list[Any], list[Any], list[Unit]], dict[str, Any]],
) -> dict[str, Any]:
    """``test`` over the units both runs have, overall and per task."""
    common = [unit for unit in after if unit in before]
    tasks: dict[str, list[Unit]] = defaultdict(list)
    for unit in common:
        tasks[unit[0]].append(unit)

    def over(units: list[Unit]) -> dict[str, Any]:
        return test([before[u] for u in units], [after[u] for u in units], units)

    overall = over(common)
    return {
        "overall": overall,
        # a task holding every unit (a one-task suite) gets the overall result: the same
        # test over the same units, not drawn again (thousands of resamples a test)
        "tasks": {
            task: overall if len(units) == len(common) else over(units)
            for task, units in sorted(tasks.items())
        },
    }


def delta_interval(paired: Mapping[str, Any] | None, part: str, name: str, task: str = "") -> Any:
    """The paired entry of one candidate (``win``) or contestant (``score``, ``passed``),
    overall or for ``task``; None when there is none."""
    entry = ((paired or {}).get(part) or {}).get(name)
    if not entry:
        return None
    return entry["tasks"].get(task) if task else entry["overall"]


def below_zero(paired: Mapping[str, Any] | None, part: str, name: str) -> bool | None:
    """Whether the paired interval of ``name``'s overall change lies wholly below 0: a
    significant drop. None without an interval (no units, or too few)."""
    ci = (delta_interval(paired, part, name) or {}).get("ci")
    return None if not ci else ci[1] < 0


def significance_lines(paired: Mapping[str, Any] | None) -> list[str]:
    """The terminal lines of the paired significance: per candidate the paired Δ win-rate,
    per contestant the Δ scorecard score and the Δ pass rate with its p, naming its test."""
    if paired is None:
        return ["  paired significance: none (a report predates per-unit figures)"]
    level = f"{paired['level']:.0%}"
    lines = [f"  paired by case and repeat ({level} paired bootstrap intervals, p over cases):"]
    for part, what in (("win", "win-rate"), ("score", "scorecard score")):
        for name, entry in paired[part].items():
            d = entry["overall"]
            lines.append(
                f"    {name}: {what} {d['delta']:+.3f} {num.signed_interval(d['ci'])} n={d['n']}"
                if d["n"] else f"    {name}: {what}: no unit in both runs"
            )  # fmt: skip
    for name, entry in paired["passed"].items():
        m = entry["overall"]
        if m["n"]:
            lines.append(
                f"    {name}: pass rate {m['delta']:+.3f} (lost {m['lost']}, gained "
                f"{m['gained']}), p={m['p_value']:.3g} ({m.get('test', 'McNemar exact')}) "
                f"n={num.cases(m, unit='units')}"
            )
    return lines
