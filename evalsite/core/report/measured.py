"""What a run measured, and its words: the one answer the run page's summary card leads with
and the run lists (`evalsite list`, the web's lists) print as its headline.

A run with pairwise judging measured win-rates: the headline is each candidate's win-rate
with its interval when the calibration gate allows it, else UNCALIBRATED and why. Any other
run measured scores, and says so by the first that applies: the scorecard's weighted score
(a suite with a scorecard), the matrix's score (models × variants), pass^k (k > 1 attempts a
case), or the share of scored answers that passed every verdict. The lead figure is the
highest, with whose it is. Every figure is the report's own, printed by :mod:`numbers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.document import Context
from evalsite.core.report.matrix import matrix_of
from evalsite.core.report.matrix_section import score_from_text
from evalsite.core.report.text import visible

__all__ = ["UNCALIBRATED", "Measured", "MeasuredRow", "measured"]

UNCALIBRATED = "UNCALIBRATED"
NAME_CHARS = 120


@dataclass(frozen=True)
class MeasuredRow:
    name: str
    figure: str  # "0.925"
    detail: str  # "37/40 passed of those scored"


@dataclass(frozen=True)
class Measured:
    kind: str  # "win_rates" | "scorecard" | "matrix" | "pass_k" | "score"
    title: str  # "Matrix score"
    lead: str  # the key figure: the highest score ("" for win-rates: the card's table)
    lead_of: str  # whose it is: the contestants at the highest, joined
    basis: str  # what the figure is, in words
    rows: tuple[MeasuredRow, ...]
    text: str  # the whole on one line, for the run lists

    @property
    def win_rates(self) -> bool:
        return self.kind == "win_rates"


def measured(report: Mapping[str, Any]) -> Measured:
    """What the run measured, from its stored report: the win-rates when pairs were judged,
    else the first of scorecard, matrix, pass^k and score that applies and scored anything
    (the first that applies when none did)."""
    ctx = Context.of(report)
    if _pairwise(ctx):
        return Measured("win_rates", "Win-rates", "", "", "", (), _win_rate_text(ctx))
    matrix, _ = matrix_of(report)
    k = _attempts(report)
    kinds = [
        ("scorecard", matrix.get("score_from") == "scorecard"),
        ("matrix", bool(matrix.get("grid"))),
        ("pass_k", k > 1),
        ("score", True),
    ]
    found = [_scores(kind, matrix, report, k) for kind, applies in kinds if applies]
    return next((m for m in found if m.lead != num.MISSING), found[0])


def _scores(kind: str, matrix: Mapping[str, Any], report: Mapping[str, Any], k: int) -> Measured:
    if kind == "pass_k":
        return _pass_k(report, k)
    title = {"scorecard": "Scorecard score", "matrix": "Matrix score"}.get(kind, "Score")
    cells = list(matrix.get("cells") or ())
    rows = tuple(MeasuredRow(_cell_name(c), num.rate(c.get("score")), _passed(c)) for c in cells)
    scored = [(float(c["score"]), _cell_name(c)) for c in cells if c.get("score") is not None]
    return _with_lead(kind, title, score_from_text(matrix), rows, scored)


def _pairwise(ctx: Context) -> bool:
    """Pairs were judged: a judge, more than one contestant, and the judge compared answers."""
    report = ctx.report
    return bool(report.get("judge")) and not ctx.one_contestant and report.get("pairwise", True)


def _win_rate_text(ctx: Context) -> str:
    if not ctx.eligible:
        cal = ctx.get("calibration")
        reason = cal.get("reason") or cal.get("status") or "not calibrated"
        return f"{UNCALIBRATED}: {visible(reason)}"
    if not ctx.candidates:
        return "no candidate has a win-rate"
    rates = ctx.get("win_rates")
    return "; ".join(
        f"{visible(name)} {num.rate((rates[name] or {}).get('win_rate'))} "
        f"{num.interval_or_reason(rates[name] or {})}"
        for name in ctx.candidates
    )


def _attempts(report: Mapping[str, Any]) -> int:
    cards = (report.get("per_contestant") or {}).values()
    return max((int((c.get("pass_k") or {}).get("k") or 1) for c in cards), default=1)


def _pass_k(report: Mapping[str, Any], k: int) -> Measured:
    rows, scored = [], []
    for name, card in (report.get("per_contestant") or {}).items():
        pk = card.get("pass_k") or {}
        cases = num.count(pk.get("estimated", pk.get("cases", 0)))
        rate = pk.get("pass_all_rate")
        any_k = f"pass@{k} {num.rate(pk.get('pass_any_rate'))} over {cases} cases"
        rows.append(MeasuredRow(visible(name, NAME_CHARS), num.rate(rate), any_k))
        if rate is not None:
            scored.append((float(rate), rows[-1].name))
    basis = f"the share of cases that passed on all {k} attempts"
    return _with_lead("pass_k", f"pass^{k}", basis, tuple(rows), scored)


def _with_lead(
    kind: str,
    title: str,
    basis: str,
    rows: tuple[MeasuredRow, ...],
    scored: list[tuple[float, str]],
) -> Measured:
    if not scored:
        return Measured(kind, title, num.MISSING, "", basis, rows, f"{title}: nothing scored")
    top = max(score for score, _ in scored)
    names = ", ".join(name for score, name in scored if round(score, 9) == round(top, 9))
    of = f" (highest of {len(rows)})" if len(rows) > 1 else ""
    text = f"{title} {num.rate(top)}: {names}{of}"
    return Measured(kind, title, num.rate(top), names, basis, rows, text)


def _cell_name(cell: Mapping[str, Any]) -> str:
    return visible(str(cell.get("contestant") or ""), NAME_CHARS)


def _passed(cell: Mapping[str, Any]) -> str:
    errors = int(cell.get("errors") or 0)
    text = f"{num.count(cell.get('passed'))}/{num.count(cell.get('scored'))} passed"
    return text + (f", {errors} {'error' if errors == 1 else 'errors'} left out" if errors else "")
