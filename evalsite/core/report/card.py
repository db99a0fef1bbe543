"""The summary card at the top of a run's page: it leads with what the run measured
(:mod:`measured`: the win-rates and the headline or why there is none, each candidate's
win-rate beside its schema-pass rate; or the scorecard, matrix, pass^k or score), then the
cost and the warnings grouped.

Every figure is read from the stored report and printed by :mod:`numbers` as everywhere
else; nothing is recomputed. Text from the report goes through :func:`visible` (one line,
hidden characters shown); the page's template escapes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.document import Context
from evalsite.core.report.judge_text import consistency_text, corrected_text
from evalsite.core.report.measured import Measured, measured
from evalsite.core.report.overview import win_rate_cell
from evalsite.core.report.text import visible
from evalsite.core.scoring.aggregate import TAG_FLOOR

__all__ = ["Card", "CandidateLine", "WarningGroup", "group_warnings", "summary_card"]

NAME_CHARS = 120
MESSAGE_CHARS = 300


@dataclass(frozen=True)
class CandidateLine:
    name: str
    vs: str
    win_rate: str  # with its dagger when not headline-eligible
    interval: str
    n: str
    flips: str
    flip_warning: bool  # the flip rate says the win-rate measures order, not quality
    schema_pass: str  # "0.880 (n=25)"
    corrected: str = ""  # the label-corrected win-rate in words (judge_text.py)
    consistency: str = ""  # the judge's self-consistency, beside the flips


@dataclass(frozen=True)
class WarningGroup:
    """One line of the warnings block: a lone warning, or ``title`` over several alike."""

    title: str
    items: tuple[str, ...] = ()


@dataclass(frozen=True)
class Card:
    eligible: bool
    status: str  # the run's, as reported ("done"; "cancelled" for a partial report)
    detail: str
    judged: bool  # a judge ran
    measured: Measured  # what the run measured: the card leads with it
    gate: str  # the calibration gate's status: "ok", "no_labels", "below_floor", …
    reason: str
    labels: int  # labels the kappa was measured over
    labels_still: str  # what labelling would change, in words ("" when nothing is needed)
    no_labels: bool
    failed_gates: tuple[tuple[str, str], ...]  # the suite's CI gates that failed: (gate, figure)
    candidates: tuple[CandidateLine, ...]
    schema: tuple[tuple[str, str], ...]  # (contestant, schema-pass rate) when nothing was judged
    cost_this_run: str
    cost_split: str  # "answers $x, judge $y"
    cost_if_uncached: str
    cache_hit_rate: str
    simulated: bool
    cost_incomplete: bool
    warnings: tuple[WarningGroup, ...]
    warning_count: int


def summary_card(report: Mapping[str, Any]) -> Card:
    ctx = Context.of(report)
    cal, totals = ctx.get("calibration"), ctx.get("totals")
    gate = str(cal.get("status") or "unknown")
    return Card(
        eligible=ctx.eligible,
        status=visible(report.get("status") or "unknown"),
        detail=visible(report.get("detail"), MESSAGE_CHARS),
        judged=bool(report.get("judge")),
        measured=measured(report),
        gate=visible(gate),
        reason=visible(cal.get("reason"), MESSAGE_CHARS),
        labels=int(cal.get("n") or 0),
        labels_still=_labels_still(cal),
        no_labels=gate == "no_labels",
        failed_gates=tuple(
            (visible(g.get("gate")), visible(g.get("message"), MESSAGE_CHARS))
            for g in report.get("gates") or []
            if g.get("status") == "failed"
        ),
        candidates=tuple(_candidate(ctx, name) for name in ctx.candidates),
        schema=_schema_rates(ctx),
        cost_this_run=num.money(totals.get("cost_usd"), digits=4),
        cost_split=(
            f"answers {num.money(totals.get('cost_answers_usd'), digits=4)}, "
            f"judge {num.money(totals.get('cost_judge_usd'), digits=4)}"
        ),
        cost_if_uncached=num.money(totals.get("cost_if_uncached_usd"), digits=4),
        cache_hit_rate=num.rate(totals.get("cache_hit_rate")),
        simulated=bool(totals.get("simulated")),
        cost_incomplete=bool(totals.get("cost_incomplete")),
        warnings=group_warnings(report),
        warning_count=len(report.get("warnings") or []),
    )


def _labels_still(cal: Mapping[str, Any]) -> str:
    """What more labels would do, from the report's own `labels_needed` and gate."""
    status, needed = cal.get("status"), cal.get("labels_needed")
    if status == "ok":
        return ""
    if isinstance(needed, int) and needed > 0:
        return (
            f"labels still needed: {needed} more, at the current agreement, would lift the "
            "kappa interval's lower bound above the floor"
        )
    if status == "no_labels":
        return "no labels yet"
    if status == "kappa_undefined":
        return "label more pairs: humans and judge chose one category throughout"
    if status == "insufficient_labels":
        return f"labels still needed: the gate needs {num.count(cal.get('min_labels'))}"
    return "at this agreement, more labels alone will not lift the kappa above the floor"


def _candidate(ctx: Context, name: str) -> CandidateLine:
    row = ctx.get("win_rates")[name] or {}
    return CandidateLine(
        name=visible(name, NAME_CHARS),
        vs=visible(row.get("vs") or ctx.baseline, NAME_CHARS),
        win_rate=win_rate_cell(ctx, row.get("win_rate")),
        interval=num.interval_or_reason(row),
        n=num.cases(row),
        flips=num.count(row.get("flips", 0)),
        flip_warning=bool(row.get("flip_warning")),
        corrected=corrected_text(row, ctx.eligible),
        consistency=consistency_text(row),
        schema_pass=num.rate_n(row.get("schema_pass_rate"), row.get("schema_n")),
    )


def _schema_rates(ctx: Context) -> tuple[tuple[str, str], ...]:
    if ctx.candidates:
        return ()
    cards = ctx.get("per_contestant")
    rates = []
    for name in ctx.contestants:
        schema = (cards.get(name) or {}).get("schema") or {}
        rates.append((visible(name, NAME_CHARS), num.rate_n(schema.get("rate"), schema.get("n"))))
    return tuple(rates)


def group_warnings(report: Mapping[str, Any]) -> tuple[WarningGroup, ...]:
    """The report's warnings, one group each in their order, except the tags below the
    pass-rate floor (the flagged cells of `per_tag`): each contestant's share one group,
    after the others, in the contestants' order, naming each tag with its rate."""
    flagged = _flagged_tags(report)
    prefixes = tuple(f"{name}: tag {tag}: " for name, tags in flagged.items() for tag, _ in tags)
    groups = [
        WarningGroup(visible(text, MESSAGE_CHARS))
        for text in report.get("warnings") or []
        if not str(text).startswith(prefixes)
    ]
    for name, tags in flagged.items():
        noun = "tag" if len(tags) == 1 else "tags"
        title = visible(f"{name}: {len(tags)} {noun} pass below {TAG_FLOOR:.2f}", MESSAGE_CHARS)
        items = (visible(f"{tag} {num.rate(rate)}", NAME_CHARS) for tag, rate in tags)
        groups.append(WarningGroup(title, tuple(items)))
    return tuple(groups)


def _flagged_tags(report: Mapping[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    """Per contestant with any, its (tag, rate) below the floor, from `per_tag`'s cells."""
    order = [str(name) for name in report.get("contestants") or []]
    flagged: dict[str, list[tuple[str, Any]]] = {name: [] for name in order}
    for row in report.get("per_tag") or []:
        for name, cell in (row.get("contestants") or {}).items():
            if (cell or {}).get("flagged"):
                flagged.setdefault(str(name), []).append((str(row.get("tag")), cell.get("rate")))
    return {name: tags for name, tags in flagged.items() if tags}
