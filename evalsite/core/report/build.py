"""Building a run's report (SPEC §11) from its rows, once, as a plain JSON-able dict.

Every figure is computed here from the rows the caller passes (answers, pairs, matched
labels), by the statistics in :mod:`evalsite.core.stats`; the page, report.md,
report.html and the CLI summary only render the dict. Nothing here reads a database.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import numpy as np

from evalsite.core.calibration import REPEATS_RULE, Calibration, calibration_summary
from evalsite.core.gates import check_gates
from evalsite.core.judge_warnings import (
    DEFAULT_JUDGE_MAX_TOKENS,
    budget_warning,
    cut_off_warning,
    self_preference_warning,
)
from evalsite.core.pricing import priced_as_notes
from evalsite.core.report.answer_warnings import answer_counts, answer_warnings
from evalsite.core.report.case_diff import CaseChange
from evalsite.core.report.compare import compare_reports
from evalsite.core.report.corrections import judge_figures, length_warnings
from evalsite.core.report.matrix import DEFAULT_POINTS, matrix_report, unpriced_contestants
from evalsite.core.report.pairing import paired_units
from evalsite.core.scoring.aggregate import (
    TAG_FLOOR,
    TagRate,
    contestant_rates,
    tag_rates,
)
from evalsite.core.scoring.scorecard import CaseScore, Criterion, score_answer, scorecard_report
from evalsite.core.stats.bootstrap import (
    below_floor_p,
    cluster_index,
    cluster_mean_interval,
    seed_from,
)
from evalsite.core.stats.latency import latency_percentiles
from evalsite.core.stats.multiple import ONE_SIDED_ALPHA, holm
from evalsite.core.stats.pairs import MIN_N_FOR_INTERVAL, win_rate
from evalsite.core.stats.pass_k import pass_k_figures
from evalsite.core.stats.ranking import bradley_terry
from evalsite.core.stats.record import jsonable
from evalsite.core.suite_parts import DEFAULT_MIN_KAPPA, DEFAULT_MIN_LABELS

__all__ = ["AnswerRow", "PairRow", "ReportInput", "build_report"]

FORMAT = 1
MATRIX_DIGITS = 9  # the matrix's money to the nano-dollar, as answers store it


NO_LOOK_WARNING = (
    "no-look run: no case data was kept (prompts, answers, judge rationales and notes are "
    "not stored); scores, verdicts, counts and costs are"
)


class AnswerRow(NamedTuple):
    """A report's row of one answer: 100,000 of them in a large run's report. A named tuple,
    immutable and built at tuple speed (a frozen dataclass sets each of its 29 fields
    through ``object.__setattr__``: 10 us a row against 2 us, 0.8 s of a 100,000-answer
    report)."""

    task: str
    case: str
    contestant: str
    repeat: int
    status: str  # done / error
    tags: tuple[str, ...] = ()
    schema_verdict: str = ""
    schema_mode: str = ""
    has_schema: bool = False  # its task holds answers to a JSON Schema
    has_checks: bool = False
    checks_passed: bool | None = None
    exec_verdict: str = ""
    isolation: str = ""
    graded: bool = False
    grade_score: int | None = None
    grade_passed: bool | None = None
    match_score: float | None = None  # weighted_match, None when the task has none
    match_passed: bool | None = None
    json_valid: bool | None = None  # read only when the scorecard has a json_valid criterion
    passed: bool | None = None
    latency_ms: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cost_if_uncached_usd: float | None = None
    cached: bool = False
    error_kind: str = ""
    error_message: str = ""
    finish_reason: str = ""

    @property
    def had_schema(self) -> bool:
        """Whether the answer was held to a schema: its task has one (an answer that errored
        fails it), or it has a schema verdict."""
        return self.has_schema or self.schema_verdict in ("pass", "parse_fail", "schema_fail")

    @property
    def effective_pass(self) -> bool:
        """The attempt passed: ``passed`` is its stored pass, decided by the one rule
        (:func:`~evalsite.core.scoring.aggregate.answer_passed`: schema, checks, execution,
        match and, on a graded case, the grade), so an answer that errored never passes."""
        return self.status == "done" and self.passed is True


@dataclass(frozen=True)
class PairRow:
    key: int
    task: str
    case: str
    repeat: int
    baseline: str
    candidate: str
    excluded_reason: str = ""
    score: float | None = None
    flip: bool | None = None
    category: str = ""


@dataclass(frozen=True)
class ReportInput:
    run_id: str
    status: str
    suite_name: str
    suite_hash: str
    contestants: Sequence[str]
    answers: Sequence[AnswerRow]
    pairs: Sequence[PairRow]
    calibration: Calibration
    detail: str = ""
    created_at: str = ""
    finished_at: str | None = None
    judge_model: str | None = None
    judge_config: Mapping[str, str] | None = None  # what the kappa measures (SPEC §19)
    min_kappa: float = DEFAULT_MIN_KAPPA
    min_labels: int = DEFAULT_MIN_LABELS
    min_kappa_lower_bound: float | None = None  # judge.calibration.min_kappa_lower_bound
    mover_threshold: float = 0.15
    task_kinds: Mapping[str, str] = field(default_factory=dict)
    price_table: Mapping[str, Any] = field(default_factory=dict)
    repeats: int = 1
    pairing: str = "baseline"
    judge_calls: int = 0
    judge_cache_hits: int = 0
    judge_cost_usd: float = 0.0
    judge_uncached_usd: float = 0.0
    judge_errors: Sequence[Mapping[str, Any]] = ()
    judge_max_tokens: int | None = None  # the suite's judge.max_tokens, None when unset
    judge_cut_off: int = 0  # judge replies stopped at max_tokens that left no verdict
    simulated: bool = False
    no_look: bool = False  # no case data was kept (docs/no-look.md)
    cost_incomplete: bool = False
    command: str = ""
    cache_state: str = ""
    previous: Mapping[str, Any] | None = None
    gate: Mapping[str, Any] = field(default_factory=dict)
    pinned: Mapping[str, Any] | None = None  # the pinned baseline run's report
    strict_gates: bool = False  # --strict-gates: a gate on a contestant not in the run fails
    on_below_floor: str = "flag"  # judge.calibration.on_below_floor; "fail" is a gate
    case_baseline: str = ""  # `run --baseline`: each case held against it (core.gates)
    # …and its cases against the run's, or why they cannot be held against it
    baseline_changes: Sequence[CaseChange] | str = ()
    scorecard: Sequence[Criterion] = ()  # the suite's scorecard: criteria
    # each answer's scorecard, in the order of `answers`, when the caller has worked them
    # out (answers.jsonl shows them); else build_report works them out, once
    scorecards: Sequence[CaseScore] = ()
    report_path: str = ""
    frontier_points: float = DEFAULT_POINTS  # the suite's report.frontier_points
    judge_consistency: int = 0  # the suite's judge.consistency: k extra judgements
    rechecks: Sequence[tuple[str, int, str, str]] = ()  # (candidate, pair, first, again)
    sent: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)  # report.sent


def scorecards(data: ReportInput) -> Sequence[CaseScore]:
    """Each answer's scorecard, in the order of its answers: the caller's, or worked out."""
    if data.scorecards:
        return data.scorecards
    return [score_answer(data.scorecard, answer) for answer in data.answers]


def build_report(data: ReportInput) -> dict[str, Any]:
    """The report dict with the keys SPEC §11 lists (and the ones the renderers use)."""
    seed = seed_from(data.suite_hash)
    calibration = calibration_summary(
        data.calibration,
        min_kappa=data.min_kappa,
        min_labels=data.min_labels,
        min_lower_bound=data.min_kappa_lower_bound,
        seed=seed,
    ) | {"judge_config": dict(data.judge_config) if data.judge_config else None}
    eligible = calibration["status"] == "ok"
    win_rates = _win_rates(data, seed)
    figures_of = judge_figures(data, eligible=eligible) if data.pairs else {}  # pairwise only
    for candidate, figures in figures_of.items():
        if candidate in win_rates:  # corrected and length-aware (docs/judging.md)
            win_rates[candidate] |= figures
    for rate in win_rates.values():  # flagged on the rate itself, wherever it is read
        rate["uncalibrated"] = not eligible
    per_tag = _per_tag(data)
    cards = scorecards(data)
    report = {
        "format": FORMAT,
        "run_id": data.run_id,
        "status": data.status,
        "no_look": data.no_look,
        "detail": data.detail,
        "created_at": data.created_at,
        "finished_at": data.finished_at,
        "suite": {
            "name": data.suite_name,
            "hash": data.suite_hash,
            "mover_threshold": data.mover_threshold,
        },
        "contestants": list(data.contestants),
        "baseline": data.contestants[0],
        "judge": (
            {
                "model": data.judge_model,
                "is_contestant": _is_contestant(data),
                "config": dict(data.judge_config) if data.judge_config else None,
            }
            if data.judge_model
            else None
        ),
        "price_table": dict(data.price_table),
        # what each contestant and the judge was sent ({who: [{params, tasks}]}, core.report.sent)
        "sent": {who: [dict(entry) for entry in sets] for who, sets in data.sent.items()},
        "repeats": data.repeats,
        "headline_eligible": eligible,
        "calibration": calibration,
        "win_rates": win_rates,
        # False when the judge only graded answers (no task is judged in pairs): then there
        # are no win-rates to calibrate, and nothing says they are UNCALIBRATED.
        "pairwise": bool(data.pairs),
        "bradley_terry": _ranking(data, seed) if data.pairing == "all" else None,
        "per_contestant": _per_contestant(data),
        "scorecard": scorecard_report(data.scorecard, data.answers, data.contestants, cards),
        "per_task": _per_task(data, win_rates),
        "per_tag": per_tag,
        # the tag cells tested against the floor: the family the per-tag Holm correction reads
        "per_tag_comparisons": sum(
            1
            for row in per_tag
            for cell in row["contestants"].values()
            if cell.get("p_value") is not None
        ),  # fmt: skip
        "exclusions": _exclusions(data),
        "failures": _failures(data),
        "totals": _totals(data),
        "reproduce": {
            "command": data.command,
            "price_table": _table_line(data.price_table),
            "cache": data.cache_state,
        },
        "report_path": data.report_path,
        "paired": paired_units(data, cards),  # per unit, for paired comparisons
    }
    report["movers"] = _movers(report, data.previous, data.mover_threshold)
    report["warnings"] = _warnings(data, report) + length_warnings(report["win_rates"])
    # after the scorecard, which scores its cells when there is one, and before the report's
    # rounding to 6 places: a cost per scored answer is often under $0.00001, where 6 places
    # would tie cells that differ, so the matrix keeps nano-dollars (9 places)
    matrix = matrix_report(
        report, unpriced=unpriced_contestants(data.answers), points=data.frontier_points
    )
    report = jsonable(report)
    gates = check_gates(
        report,
        data.gate,
        data.pinned,
        strict=data.strict_gates,
        on_below_floor=data.on_below_floor,
        case_baseline=data.case_baseline,
        baseline_changes=data.baseline_changes,
    )
    report["gates"] = [result.to_dict() for result in gates]
    report["gates_passed"] = not any(result.failed for result in gates)
    return cast("dict[str, Any]", report | jsonable(matrix, digits=MATRIX_DIGITS))


def _is_contestant(data: ReportInput) -> bool:
    return any(c.partition("@")[0] == data.judge_model for c in data.contestants)


def _table_line(table: Mapping[str, Any]) -> str:
    if not table:
        return ""
    verified = "" if table.get("verified") else " (UNVERIFIED)"
    aliases = "".join(f"; {note}" for note in priced_as_notes(table.get("priced_as") or {}))
    return f"{table.get('name', '')} pinned {table.get('pinned', '')}{verified}{aliases}"


# --- win-rates -----------------------------------------------------------------------------


def _win_rates(data: ReportInput, seed: int) -> dict[str, Any]:
    if not data.judge_model:
        return {}
    rates = {}
    for candidate in data.contestants[1:]:
        pairs = [
            p for p in data.pairs if p.candidate == candidate and p.baseline == data.contestants[0]
        ]
        rates[candidate] = _win_rate_entry(pairs, seed, data.contestants[0])
        schema = schema_figures([a for a in data.answers if a.contestant == candidate])
        rates[candidate]["schema_pass_rate"], rates[candidate]["schema_n"] = (
            schema["rate"],
            schema["n"],
        )
    return rates


def _win_rate_entry(pairs: Sequence[PairRow], seed: int, baseline: str) -> dict[str, Any]:
    judged = [p for p in pairs if not p.excluded_reason and p.score is not None]
    excluded = Counter(p.excluded_reason for p in pairs if p.excluded_reason)
    rate = win_rate(
        [cast(float, p.score) for p in judged],  # judged: scored
        flips=sum(1 for p in judged if p.flip),
        seed=seed,
        clusters=[(p.task, p.case) for p in judged],
    ).to_dict()
    return (
        {"vs": baseline}
        | rate
        | {
            "excluded": sum(excluded.values()),
            "excluded_by_reason": dict(sorted(excluded.items())),
        }
    )


def schema_figures(answers: Sequence[AnswerRow]) -> dict[str, Any]:
    """One contestant's schema figures: its pass rate over the answers that had a schema
    (an answer that errored on a task with a schema fails it; an answer with no schema is
    not counted), so with no schema there is no rate; and how each schema verdict went."""
    held = [a for a in answers if a.had_schema]
    verdicts = Counter(a.schema_verdict for a in held)
    modes = Counter(a.schema_mode for a in held if a.schema_verdict == "pass")
    return {
        "n": len(held),
        "pass": verdicts["pass"],
        "rate": _rate(verdicts["pass"], len(held)),
        "native": modes["native"],
        "prompted": modes["prompted"],
        "parse_fail": verdicts["parse_fail"],
        "schema_fail": verdicts["schema_fail"],
        "not_applicable": sum(1 for a in answers if a.status == "done" and not a.had_schema),
    }


def _ranking(data: ReportInput, seed: int) -> list[dict[str, Any]]:
    judged = [p for p in data.pairs if not p.excluded_reason and p.score is not None]
    if not judged:
        return []
    comparisons = [(p.baseline, p.candidate, cast(float, p.score)) for p in judged]  # scored
    cases = [(p.task, p.case) for p in judged]
    return [score.to_dict() for score in bradley_terry(comparisons, seed=seed, clusters=cases)]


# --- per contestant, task, tag --------------------------------------------------------------


def _rate(passed: int, n: int) -> float | None:
    return passed / n if n else None


def _per_contestant(data: ReportInput) -> dict[str, Any]:
    by_contestant: dict[str, list[AnswerRow]] = defaultdict(list)
    for answer in data.answers:
        by_contestant[answer.contestant].append(answer)
    outcomes: dict[tuple[Any, ...], list[bool]] = defaultdict(list[Any])
    for answer in data.answers:
        outcomes[(answer.task, answer.case), answer.contestant].append(answer.effective_pass)
    repeats = contestant_rates(outcomes, k=data.repeats)
    seed = seed_from(data.suite_hash)
    return {
        contestant: _contestant(
            by_contestant.get(contestant, []),
            pass_k_figures(repeats.get(contestant), data.repeats, seed=seed),
        )
        for contestant in data.contestants
    }


def _contestant(answers: list[AnswerRow], pass_k: dict[str, Any]) -> dict[str, Any]:
    done = [a for a in answers if a.status == "done"]
    checked = [a for a in done if a.has_checks]
    executed = [a for a in done if a.exec_verdict]
    exec_verdicts = Counter(a.exec_verdict for a in executed)
    graded = [a for a in done if a.graded]
    scores = [a.grade_score for a in graded if a.grade_score is not None]
    latency = latency_percentiles([a.latency_ms for a in done if a.latency_ms is not None])
    cost = math.fsum(a.cost_usd or 0 for a in answers)
    uncached = math.fsum(a.cost_if_uncached_usd or 0 for a in answers)
    calls = sum(1 for a in done if not a.cached) + sum(1 for a in answers if a.status != "done")
    return {
        "schema": schema_figures(answers),
        "checks": {
            "n": len(checked),
            "pass": sum(1 for a in checked if a.checks_passed),
            "rate": _rate(sum(1 for a in checked if a.checks_passed), len(checked)),
        },
        "exec": {
            "n": len(executed),
            "pass": exec_verdicts["pass"],
            "fail": exec_verdicts["fail"],
            "error": exec_verdicts["error"],
            "rate": _rate(exec_verdicts["pass"], len(executed)),
            "isolation": ", ".join(sorted({a.isolation for a in executed if a.isolation})) or None,
        },
        "grade": {
            "n": len(scores),
            "pass": sum(1 for a in graded if a.grade_passed),
            "mean": (math.fsum(scores) / len(scores) - 1) / 4 if scores else None,
            "errors": len(graded) - len(scores),
        },
        "pass_k": pass_k,
        "latency": latency.to_dict(),
        "tokens": {
            "input": sum(a.input_tokens or 0 for a in answers),
            "output": sum(a.output_tokens or 0 for a in answers),
        },
        "cost": {
            "usd": cost,
            "if_uncached_usd": uncached,
            "per_1k_calls_usd": uncached / len(done) * 1000 if done else None,
            "calls": calls,
        },
        "errors": sum(1 for a in answers if a.status != "done"),
    } | answer_counts(answers)


def _per_task(
    data: ReportInput, win_rates: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Each task's pass rate and win-rates. A task that holds every pair of a candidate
    has the candidate's overall win-rate (`win_rates`): the same pairs in the same order,
    the same cases and seed, so the same draws, not drawn again (2,000 resamples of every
    case)."""
    baseline, seed = data.contestants[0], seed_from(data.suite_hash)
    of_candidate = Counter(p.candidate for p in data.pairs if p.baseline == baseline)
    rows = []
    for task in dict.fromkeys(a.task for a in data.answers):
        answers = [a for a in data.answers if a.task == task]
        passed = sum(1 for a in answers if a.effective_pass)
        rates = {}
        for candidate in data.contestants[1:] if data.judge_model else ():
            pairs = [
                p
                for p in data.pairs
                if p.task == task and p.candidate == candidate and p.baseline == baseline
            ]
            every = len(pairs) == of_candidate[candidate]
            rate = _task_rate(win_rates[candidate]) if every else _task_win_rate(pairs, seed)
            rates[candidate] = rate | {
                "flips": sum(1 for p in pairs if p.flip),
                "excluded": sum(1 for p in pairs if p.excluded_reason),
            }
        rows.append(
            {
                "task": task,
                "kind": data.task_kinds.get(task, ""),
                "answers": len(answers),
                "pass_rate": _rate(passed, len(answers)),
                "win_rates": rates,
            }
        )
    return sorted(rows, key=_worst_task)


def _task_win_rate(pairs: Sequence[PairRow], seed: int) -> dict[str, Any]:
    """A task's win-rate with the overall one's interval over cases and its rules (the
    minimum of cases, BCa and "few cases" below FEW_CLUSTERS, none when every pair scored
    alike), by the same :func:`~evalsite.core.stats.pairs.win_rate`."""
    judged = [p for p in pairs if not p.excluded_reason and p.score is not None]
    rate = win_rate(
        [cast(float, p.score) for p in judged],  # judged: scored
        flips=sum(1 for p in judged if p.flip),
        seed=seed,
        clusters=[p.case for p in judged],
    )
    return _task_rate(rate.to_dict())


def _task_rate(rate: Mapping[str, Any]) -> dict[str, Any]:
    """What a task's row keeps of a win-rate."""
    keys = ("win_rate", "n", "ci", "cases", "method", "no_interval")
    return {key: value for key, value in rate.items() if key in keys}


def _worst_task(row: dict[str, Any]) -> tuple[Any, ...]:
    """Worst first: the lowest candidate win-rate, then the lowest pass rate."""
    rates = [r["win_rate"] for r in row["win_rates"].values() if r["win_rate"] is not None]
    pass_rate = row["pass_rate"] if row["pass_rate"] is not None else 1.0
    return (min(rates) if rates else 1.0, pass_rate, row["task"])


def _per_tag(data: ReportInput) -> list[dict[str, Any]]:
    """Per tag, each contestant's pass rate over its answers with the tag, with its
    interval over cases, flagged when it is below the floor after Holm's correction over
    every cell tested, and each candidate's win-rate over the tag's pairs."""
    by_contestant: dict[str, list[AnswerRow]] = defaultdict(list)
    for answer in data.answers:
        by_contestant[answer.contestant].append(answer)
    seed = seed_from(data.suite_hash)
    cells = {
        (contestant, rate.tag): _tag_cell(rate, by_contestant[contestant], seed)
        for contestant in data.contestants
        for rate in tag_rates((a.tags, a.effective_pass) for a in by_contestant[contestant])
    }
    adjusted = holm([cell["p_value"] for cell in cells.values()])
    for cell, p_holm in zip(cells.values(), adjusted, strict=True):
        cell |= {"p_holm": p_holm, "flagged": p_holm is not None and p_holm < ONE_SIDED_ALPHA}
    tags = sorted({tag for answer in data.answers for tag in answer.tags})
    empty = {"n": 0, "passed": 0, "rate": None, "flagged": False}  # a stopped run's
    return [
        {
            "tag": tag,
            "contestants": {c: cells.get((c, tag), dict(empty)) for c in data.contestants},
            "win_rates": _tag_win_rates(data, tag),
        }
        for tag in tags
    ]


TAG_RESAMPLES = 2000  # a pass rate's cluster bootstrap over cases, per tag and contestant


def _tag_cell(rate: TagRate, answers: Sequence[AnswerRow], seed: int) -> dict[str, Any]:
    """A tag's pass rate with its interval over cases (a case's repeats are one cluster:
    the win-rate's rules, none below 8 cases) and the one-sided p of "at or above the
    floor" (:func:`~evalsite.core.stats.bootstrap.below_floor_p`), None where no interval
    could be drawn from too few cases."""
    tagged = [a for a in answers if rate.tag in a.tags]
    values = np.array([a.effective_pass for a in tagged], dtype=float)
    labels = cluster_index([(a.task, a.case) for a in tagged], len(tagged))
    ci, method, reason = cluster_mean_interval(
        values, labels, seed=seed, resamples=TAG_RESAMPLES, min_n=MIN_N_FOR_INTERVAL,
        constant=lambda value: f"every answer {'passed' if value else 'failed'}",
        empty="no answers",
    )  # fmt: skip
    cases = int(labels.max()) + 1 if labels.size else 0
    tested = cases >= MIN_N_FOR_INTERVAL
    p_value = (
        below_floor_p(values, labels, floor=TAG_FLOOR, seed=seed, resamples=TAG_RESAMPLES)
        if tested
        else None
    )
    return {
        "n": rate.n, "passed": rate.passed, "rate": rate.rate, "cases": cases, "ci": ci,
        "method": method, "no_interval": reason, "below": rate.flagged, "p_value": p_value,
    }  # fmt: skip


def _tag_win_rates(data: ReportInput, tag: str) -> dict[str, Any]:
    tags_of = {(a.task, a.case): a.tags for a in data.answers}
    baseline = data.contestants[0]
    wins = {}
    for candidate in data.contestants[1:] if data.judge_model else ():
        scores = [
            p.score
            for p in data.pairs
            if p.candidate == candidate
            and p.baseline == baseline
            and p.score is not None
            and not p.excluded_reason
            and tag in tags_of.get((p.task, p.case), ())
        ]
        wins[candidate] = {
            "win_rate": math.fsum(scores) / len(scores) if scores else None,
            "n": len(scores),
        }
    return wins


# --- failures, totals, movers, warnings ------------------------------------------------------


def _exclusions(data: ReportInput) -> list[dict[str, Any]]:
    return [
        {
            "task": p.task,
            "case": p.case,
            "repeat": p.repeat,
            "candidate": p.candidate,
            "baseline": p.baseline,
            "reason": p.excluded_reason,
        }
        for p in data.pairs
        if p.excluded_reason
    ]


def _failures(data: ReportInput) -> list[dict[str, Any]]:
    failures = [
        {
            "task": a.task,
            "case": a.case,
            "repeat": a.repeat,
            "contestant": a.contestant,
            "kind": a.error_kind or "error",
            "message": a.error_message[:500],
        }
        for a in data.answers
        if a.status != "done"
    ]
    return failures + [dict(error) for error in data.judge_errors]


def _totals(data: ReportInput) -> dict[str, Any]:
    answer_cost = math.fsum(a.cost_usd or 0 for a in data.answers)
    answer_uncached = math.fsum(a.cost_if_uncached_usd or 0 for a in data.answers)
    cache_hits = sum(1 for a in data.answers if a.cached) + data.judge_cache_hits
    calls = len(data.answers) + data.judge_calls
    return {
        "answers": len(data.answers),
        "pairs": len(data.pairs),
        "judge_calls": data.judge_calls,
        "calls": calls,
        "cache_hits": cache_hits,
        "cache_hit_rate": cache_hits / calls if calls else None,
        "cost_usd": answer_cost + data.judge_cost_usd,
        "cost_answers_usd": answer_cost,
        "cost_judge_usd": data.judge_cost_usd,
        "cost_if_uncached_usd": answer_uncached + data.judge_uncached_usd,
        "simulated": data.simulated,
        "cost_incomplete": data.cost_incomplete,
    }


def _movers(
    report: Mapping[str, Any], previous: Mapping[str, Any] | None, threshold: float
) -> dict[str, Any]:
    """Per candidate and task, the win-rate change since the previous comparable run: the
    movers of ``compare previous this`` (its paired intervals and its Holm correction over
    every task tested, ``comparisons``), so the report and compare say the same."""
    if previous is None:
        return {
            "previous_run": None,
            "threshold": threshold,
            "items": [],
            "comparisons": 0,
            "note": "no earlier comparable run of this suite",
        }
    # the movers and their Holm family read only the win-rate changes: the score and
    # pass-rate tests are compare's (at 4,000 answers, 0.13 s of bootstraps left unread)
    comparison = compare_reports(previous, report, threshold=threshold, parts=("win",))
    items = [mover.to_dict() for mover in comparison.movers]
    note = comparison.reason or ("" if items else f"no task moved by {threshold:.2f} or more")
    return {
        "previous_run": previous.get("run_id"),
        "threshold": threshold,
        "items": items,
        "comparisons": comparison.comparisons,
        "note": note,
    }


def _warnings(data: ReportInput, report: Mapping[str, Any]) -> list[str]:
    warnings = []
    calibration = report["calibration"]
    if data.judge_model and data.pairs and not report["headline_eligible"]:
        warnings.append(f"win-rates are UNCALIBRATED: {calibration['reason']}")
    for candidate, rate in report["win_rates"].items():
        if rate["flip_warning"]:
            warnings.append(
                f"{candidate}: flip rate {rate['flip_rate']:.2f} is above 0.30; the win-rate "
                "measures answer order, not quality"
            )
        if rate["n"] and rate["ci"] is None:
            warnings.append(f"{candidate}: n={rate['n']} is below 8; no interval is shown")
    if calibration["no_majority"]:
        warnings.append(
            f"{calibration['no_majority']} labelled items have no majority and were left out"
        )
    if calibration.get("over_repeats"):
        warnings.append(
            f"{calibration['over_repeats']} labels cover several repeats: {REPEATS_RULE}"
        )
    if calibration["labels_stale"]:
        warnings.append(
            f"{calibration['labels_stale']} labels are stale: their answers changed since"
        )
    for tag in report["per_tag"]:
        for contestant, cell in tag["contestants"].items():
            if cell["flagged"]:
                warnings.append(
                    f"{contestant}: tag {tag['tag']}: pass rate {cell['rate']:.3f} is below "
                    f"{TAG_FLOOR:.2f} (Holm p={cell['p_holm']:.3f})"
                )
    warnings += _judge_warnings(data)
    warnings += answer_warnings(data.answers, data.contestants)
    if data.cost_incomplete:
        warnings.append("some calls reported no usage; costs are a lower bound")
    if data.simulated:
        warnings.append("simulated run (fake provider): answers, verdicts and costs are not real")
    if data.no_look:
        warnings.append(NO_LOOK_WARNING)
    if data.price_table and not data.price_table.get("verified"):
        warnings.append("the price table is UNVERIFIED")
    return warnings


def _judge_warnings(data: ReportInput) -> list[str]:
    """Self-preference (a contestant of the judge's vendor; the judge being a contestant
    itself is `judge.is_contestant`), a judge budget below the floor, and its replies cut
    off by that budget."""
    if not data.judge_model:
        return []
    lines = (
        self_preference_warning(data.judge_model, data.contestants),
        budget_warning(data.judge_max_tokens),
        cut_off_warning(data.judge_cut_off, data.judge_max_tokens or DEFAULT_JUDGE_MAX_TOKENS),
    )
    return [line for line in lines if line]
