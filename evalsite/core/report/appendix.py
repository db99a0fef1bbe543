"""The closing sections of a report: what changed, failures and exclusions, warnings,
charts, how to reproduce the run, and the decision template."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.card import group_warnings
from evalsite.core.report.compare import mover_test
from evalsite.core.report.document import (
    Block,
    Cell,
    Chart,
    Code,
    Context,
    Heading,
    Items,
    Para,
    Pre,
    Section,
    Table,
)
from evalsite.core.report.overview import uncalibrated_note, win_rate_cell
from evalsite.core.report.text import visible
from evalsite.core.stats.multiple import comparisons_text

__all__ = [
    "LISTED", "MESSAGE_CHARS", "charts_section", "decision_lines", "decision_section",
    "failures_section", "gates_section", "movers_section", "reproduce_section",
    "warnings_section",
]  # fmt: skip

LISTED = 100  # failures or exclusions listed one by one; the files have every one
MESSAGE_CHARS = 300


def movers_section(ctx: Context) -> Section:
    movers = ctx.get("movers")
    if not movers.get("previous_run"):
        none = Para("No previous comparable run of this suite.")
        return Section("changes", "What changed", (none,))
    threshold = num.rate(movers.get("threshold"))
    family = movers.get("comparisons")
    since: tuple[str | Code, ...] = (
        "Since run ",
        Code(movers["previous_run"]),
        f": per-task win-rates that changed by {threshold} or more, largest first",
        f" ({comparisons_text(family)} over every task tested)." if family else ".",
    )
    if not family and movers.get("items"):
        since += (" No task had the paired cases a test needs: the movers are untested.",)
    blocks: list[Block] = [Para(since)]
    items = movers.get("items") or []
    if items:
        head: tuple[Cell, ...] = ("candidate", "task", "before", "after", "change", "paired")
        blocks += [Table(head, tuple(_mover_row(ctx, item) for item in items))]
        blocks += uncalibrated_note(ctx)
    else:
        blocks.append(Para("None."))
    if movers.get("note"):
        blocks.append(Para(("Note: ", Code(movers["note"])), note=True))
    return Section("changes", "What changed", tuple(blocks))


def _mover_row(ctx: Context, item: Mapping[str, Any]) -> tuple[Cell, ...]:
    return (
        Code(item.get("candidate") or ""),
        Code(item.get("task") or ""),
        win_rate_cell(ctx, item.get("before")),
        win_rate_cell(ctx, item.get("after")),
        num.signed_rate(item.get("delta")),
        mover_test(item) or "n/a",
    )


def failures_section(ctx: Context) -> Section:
    failures = ctx.report.get("failures") or []
    exclusions = ctx.report.get("exclusions") or []
    blocks: list[Block] = [Heading(f"Failures ({len(failures)})")]
    blocks += _listed(
        [
            (
                *_where(row, row.get("contestant") or row.get("candidate")),
                ": ",
                Code(row.get("kind") or ""),
                " \u2014 ",
                Code(visible(row.get("message"), MESSAGE_CHARS)),
            )
            for row in failures
        ],
        none="No failures.",
        rest="answers.jsonl",
    )
    blocks.append(Heading(f"Exclusions ({len(exclusions)})"))
    blocks += _listed(
        [
            (*_where(row, row.get("candidate")), ": ", Code(row.get("reason") or ""))
            for row in exclusions
        ],
        none="No pair was excluded.",
        rest="pairs.jsonl",
    )
    return Section("failures", "Failures and exclusions", tuple(blocks))


def _where(row: Mapping[str, Any], who: object) -> tuple[Any, ...]:
    return (
        Code(row.get("task") or ""),
        " / ",
        Code(row.get("case") or ""),
        f" repeat {num.count(row.get('repeat'))}, ",
        Code(str(who or "")),
    )


def _listed(items: Sequence[Cell], *, none: str, rest: str) -> list[Block]:
    if not items:
        return [Para(none)]
    blocks: list[Block] = [Items(tuple(items[:LISTED]))]
    if len(items) > LISTED:
        more = len(items) - LISTED
        blocks.append(Para(f"{more} more not listed here; {rest} has every one.", note=True))
    return blocks


def warnings_section(ctx: Context) -> Section:
    warnings = ctx.report.get("warnings") or []
    if not warnings:
        return Section("warnings", "Warnings", (Para("No warnings."),))
    # Alike warnings grouped (the tags under the pass-rate floor on one line, not 13).
    items = tuple(
        (Code(group.title), ": ", Code(", ".join(group.items)))
        if group.items
        else Code(group.title)
        for group in group_warnings(ctx.report)
    )
    count = Para(f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}:")
    return Section("warnings", "Warnings", (count, Items(items)))


def gates_section(ctx: Context) -> Section:
    """The suite's CI gates (SPEC §15), each with its figure: failed first."""
    gates = ctx.report.get("gates") or []
    if not gates:
        return Section("gates", "Gates", (Para("The suite has no gate: block."),))
    order = {"failed": 0, "not_evaluated": 1, "skipped": 2, "passed": 3}
    rows = tuple(
        (
            str(g.get("status", "")).replace("_", " ").upper(),
            Code(visible(str(g.get("gate", "")))),
            Code(visible(str(g.get("message", "")), MESSAGE_CHARS)),
        )  # fmt: skip
        for g in sorted(gates, key=lambda g: order.get(g.get("status"), 4))
    )
    failed = sum(1 for g in gates if g.get("status") == "failed")
    verdict = f"{failed} gate check(s) failed." if failed else "Every gate check passed."
    if unjudged := sum(1 for g in gates if g.get("status") == "not_evaluated"):
        verdict += f" {unjudged} not evaluated: a contestant the gate names is not in the run."
    return Section("gates", "Gates", (Para(verdict), Table(("status", "gate", "figure"), rows)))


def charts_section(ctx: Context) -> Section:
    """The charts, drawn by the renderer from the report itself. Without labels there is
    no kappa curve and no confusion matrix to draw: a line says so instead of two empty
    plots."""
    blocks: list[Block] = [
        Chart("cost_vs_winrate", "Cost if uncached against win-rate, per candidate")
    ]
    if (ctx.get("calibration").get("status") or "no_labels") == "no_labels":
        blocks.append(Para(NO_LABEL_CHARTS))
    else:
        blocks += [
            Chart("kappa_curve", "Judge\u2013human kappa as labels were added"),
            Chart("confusion", "Confusion matrix: rows human, columns judge"),
        ]
    return Section("charts", "Charts", tuple(blocks))


NO_LABEL_CHARTS = (
    "No labels yet: the kappa curve and the confusion matrix are drawn once pairs of this "
    "run's suite are labelled."
)


def reproduce_section(ctx: Context) -> Section:
    reproduce = ctx.get("reproduce")
    items: tuple[Cell, ...] = (
        ("Price table: ", Code(reproduce.get("price_table") or "")),
        ("Cache: ", Code(reproduce.get("cache") or "")),
    )
    command = reproduce.get("command") or ""
    return Section("reproduce", "Reproduce", (Pre((visible(command),)), Items(items)))


def decision_lines(ctx: Context) -> tuple[str, ...]:
    """The pre-filled decision template: plain lines, shown literally."""
    cal = ctx.get("calibration")
    evidence = [f"calibration {visible(cal.get('status') or 'unknown')}"]
    win_rates = ctx.get("win_rates")
    for name in ctx.candidates:
        row = win_rates[name]
        flag = "" if ctx.eligible else " (UNCALIBRATED)"
        evidence.append(
            f"{visible(name)} win-rate {win_rate_cell(ctx, row.get('win_rate'))}{flag} "
            f"{num.interval_or_reason(row)} (n={num.cases(row)})"
        )
    if not ctx.report.get("judge"):
        evidence.append("no judge: no win-rates")
    return (
        "Decision: adopt / keep / needs more evidence",
        f"Run: {visible(ctx.report.get('run_id'))}",
        "Reasoning:",
        "Evidence: " + "; ".join(evidence),
    )


def decision_section(ctx: Context) -> Section:
    note = Para("To fill in. The report itself makes no recommendation.", note=True)
    return Section("decision", "Decision", (note, Pre(decision_lines(ctx))))
