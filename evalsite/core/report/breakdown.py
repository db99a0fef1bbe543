"""The middle sections of a report: the scorecard per contestant, per task and per tag."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.document import Block, Cell, Code, Context, Para, Section, Table
from evalsite.core.report.overview import uncalibrated_note, win_rate_cell
from evalsite.core.scoring.aggregate import TAG_FLOOR, cases_text
from evalsite.core.stats.multiple import comparisons_text

__all__ = ["pass_k_text", "per_tag_section", "per_task_section", "scorecard_section"]

Row = Mapping[str, Any]


def _card(card: Row) -> tuple[tuple[str, Cell], ...]:
    """(label, value) of one contestant's scorecard, in the order SPEC §11 lists them."""

    def part(name: str) -> Mapping[str, Any]:
        return card.get(name) or {}

    schema, checks, exe, grade = part("schema"), part("checks"), part("exec"), part("grade")
    latency, tokens, cost = part("latency"), part("tokens"), part("cost")
    c = num.count
    return (
        ("schema pass", num.rate_n(schema.get("rate"), schema.get("n"))),
        ("native / prompted", f"{c(schema.get('native'))} / {c(schema.get('prompted'))}"),
        (
            "parse fails / schema fails",
            f"{c(schema.get('parse_fail'))} / {c(schema.get('schema_fail'))}",
        ),
        ("schema not applicable", c(schema.get("not_applicable"))),
        ("check pass", num.rate_n(checks.get("rate"), checks.get("n"))),
        ("exec pass", num.rate_n(exe.get("rate"), exe.get("n"))),
        (
            "exec pass / fail / error",
            f"{c(exe.get('pass'))} / {c(exe.get('fail'))} / {c(exe.get('error'))}",
        ),
        ("exec isolation", Code(exe["isolation"]) if exe.get("isolation") else num.MISSING),
        (
            "grade mean",
            f"{num.rate(grade.get('mean'))} (n={c(grade.get('n'))}, errors "
            f"{c(grade.get('errors'))})",
        ),
        ("pass^k / pass@k", pass_k_text(part("pass_k"))),
        (
            "latency p50 / p95",
            f"{_ms(latency.get('p50'))} / {_ms(latency.get('p95'))} (n={c(latency.get('n'))})",
        ),
        ("errors", c(card.get("errors"))),
        ("tokens in / out", f"{c(tokens.get('input'))} / {c(tokens.get('output'))}"),
        ("cost this run", num.money(cost.get("usd"))),
        ("cost if uncached", num.money(cost.get("if_uncached_usd"))),
        ("cost per 1k calls", num.money(cost.get("per_1k_calls_usd"))),
        ("calls", c(cost.get("calls"))),
    )


def pass_k_text(row: Row) -> str:
    """``pass^3 0.600 [0.400, 0.800], pass@3 0.900 [0.767, 1.000] (n=30 cases; 2 cases with
    fewer than 3 attempts left out)``: each with its interval over cases or why none."""
    k = row.get("k") or 1
    estimated = row.get("estimated", row.get("cases")) or 0
    short = row.get("short") or 0
    figures = [
        f"pass^{k} {num.rate(row.get('pass_all_rate'))} {_ci(row, 'pass_all')}".rstrip(),
        f"pass@{k} {num.rate(row.get('pass_any_rate'))} {_ci(row, 'pass_any')}".rstrip(),
    ]
    left_out = f"; {cases_text(short)} with fewer than {k} attempts left out" if short else ""
    return f"{', '.join(figures)} (n={cases_text(estimated)}{left_out})"


def _ci(row: Row, figure: str) -> str:
    """The interval ("few cases" beside a BCa one), or why there is none; nothing for a
    report from before issue 27."""
    if f"{figure}_ci" not in row:
        return ""
    return num.interval_or_reason({
        "ci": row[f"{figure}_ci"],
        "method": row.get(f"{figure}_method"),
        "no_interval": row.get(f"{figure}_why"),
    })  # fmt: skip


def _ms(value: int | None) -> str:
    return num.MISSING if value is None else f"{int(value)} ms"


SCORE_BASIS = (
    "Score: each answer's criteria that apply to its task, weighted (the weights renormalised "
    "over those that apply), averaged over the scored answers; an answer passes when every "
    "criterion that applies passes. Errors (provider errors, grades with no usable score) are "
    "excluded, never scored 0."
)
NO_SCORECARD = (
    "No scorecard in the suite: the score is the share of scored answers that passed every "
    "verdict they have (schema, checks, execution check, grade, match); errors are excluded."
)


def _scorecard_rows(ctx: Context, names: list[str]) -> tuple[tuple[Cell, ...], ...]:
    """The scorecard's rows: score, passed / scored, errors, then each criterion."""
    scorecard = ctx.get("scorecard")
    cells = [(scorecard.get("cells") or {}).get(name) or {} for name in names]
    rows: list[tuple[Cell, ...]] = [
        ("score", *(num.rate(cell.get("score")) for cell in cells)),
        (
            "passed / scored",
            *(f"{num.count(c.get('passed'))} / {num.count(c.get('scored'))}" for c in cells),
        ),
        ("errors (excluded)", *(num.count(cell.get("errors")) for cell in cells)),
    ]
    for criterion in scorecard.get("criteria") or ():
        name = str(criterion.get("criterion"))
        label = (Code(name), f" ({criterion.get('scorer')}, weight {criterion.get('weight')})")
        figures = [(cell.get("criteria") or {}).get(name) or {} for cell in cells]
        rows.append((label, *(_criterion_figures(figure) for figure in figures)))
    return tuple(rows)


def _criterion_figures(figure: Row) -> str:
    return (
        f"{num.rate(figure.get('mean'))}, pass {num.rate(figure.get('pass_rate'))} "
        f"(n={num.count(figure.get('n'))})"
    )


def scorecard_section(ctx: Context) -> Section:
    """The scorecard's cells (score, passes, errors, each criterion), then every verdict's
    figures, one column per contestant."""
    cards, cells = ctx.get("per_contestant"), ctx.get("scorecard").get("cells") or {}
    names = [name for name in ctx.contestants if name in cards or name in cells]
    names += [str(name) for name in (*cards, *cells) if name not in names]
    if not names:
        return Section("scorecard", "Scorecard", (Para("No answers."),))
    head: tuple[Cell, ...] = ("", *(_marked(ctx, name) for name in names))
    columns = [_card(cards.get(name) or {}) for name in names]
    rows = tuple(
        (label, *(column[index][1] for column in columns))
        for index, (label, _) in enumerate(columns[0])
    )
    basis = SCORE_BASIS if ctx.get("scorecard").get("criteria") else NO_SCORECARD
    table = Table(head, _scorecard_rows(ctx, names) + rows)
    return Section("scorecard", "Scorecard", (Para(basis), table))


def _marked(ctx: Context, name: str) -> Cell:
    return (Code(name), " (baseline)") if name == ctx.baseline else Code(name)


def _candidate_heads(ctx: Context) -> tuple[Cell, ...]:
    return tuple((Code(name), " win-rate") for name in ctx.candidates)


def _candidate_cells(ctx: Context, row: Row, flips: bool) -> tuple[Cell, ...]:
    cells: list[Cell] = []
    for name in ctx.candidates:
        entry = (row.get("win_rates") or {}).get(name)
        if not entry:
            cells.append(num.MISSING)
            continue
        detail = f"n={num.cases(entry)}"
        if flips:
            detail += f", flips {num.count(entry.get('flips', 0))}"
        # a per-task rate has its interval over cases; a per-tag one (and an older report) not
        judged = "cases" in entry and entry.get("win_rate") is not None
        shown = f" {num.interval_or_reason(entry)}" if judged else ""
        cells.append(f"{win_rate_cell(ctx, entry.get('win_rate'))}{shown} ({detail})")
    return tuple(cells)


def _with_win_rates(ctx: Context, key: str, title: str, intro: str, table: Table) -> Section:
    """A section of one table whose win-rate columns carry the footnote when daggered."""
    blocks: list[Block] = [Para(intro), table]
    if ctx.candidates:
        blocks += uncalibrated_note(ctx)
    return Section(key, title, tuple(blocks))


def per_task_section(ctx: Context) -> Section:
    tasks = ctx.report.get("per_task") or []
    if not tasks:
        return Section("per-task", "Per task", (Para("No tasks."),))
    head: tuple[Cell, ...] = ("task", "kind", "pass rate", *_candidate_heads(ctx))
    rows = tuple(
        (
            Code(row.get("task") or ""),
            Code(row.get("kind") or ""),
            num.rate_n(row.get("pass_rate"), row.get("answers")),
            *_candidate_cells(ctx, row, flips=True),
        )
        for row in tasks
    )
    intro = (
        "Worst first. Pass rate over the task's answers, with their n; each win-rate with "
        "its 95% interval over the task's cases (none below 8 cases)."
    )
    return _with_win_rates(ctx, "per-task", "Per task", intro, Table(head, rows))


def per_tag_section(ctx: Context) -> Section:
    """A tag × contestant table of pass rates (each flagged below the floor), then each
    candidate's win-rate over the tag's pairs."""
    tags = ctx.report.get("per_tag") or []
    if not tags:
        return Section("per-tag", "Per tag", (Para("No tags."),))
    names = list(ctx.contestants)
    head: tuple[Cell, ...] = (
        "tag",
        *((Code(name), " pass rate") for name in names),
        *_candidate_heads(ctx),
    )
    rows = tuple(
        (
            Code(row.get("tag") or ""),
            *(_tag_cell((row.get("contestants") or {}).get(name)) for name in names),
            *_candidate_cells(ctx, row, flips=False),
        )
        for row in tags
    )
    family = ctx.report.get("per_tag_comparisons")
    tested = f" ({comparisons_text(family)})" if family else ""
    intro = (
        "Each contestant's pass rate over its answers with the tag (every repeat counts), "
        "with its 95% interval over cases (none below 8 cases) and its n. FLAGGED: below "
        f"the tag floor of {TAG_FLOOR:.2f}{tested}; a rate under the floor that is not "
        "flagged may be chance."
    )
    return _with_win_rates(ctx, "per-tag", "Per tag", intro, Table(head, rows))


def _tag_cell(cell: Row | None) -> str:
    if not cell or not cell.get("n"):
        return num.MISSING
    if "cases" not in cell:  # a report from before the interval
        rate = num.rate_n(cell.get("rate"), cell.get("n"))
        return f"{rate} FLAGGED" if cell.get("flagged") else rate
    n = f"(n={num.cases(cell, unit='answers')})"
    if cell.get("below") and cell.get("p_holm") is None:  # the reason is the verdict's
        return f"{num.rate(cell.get('rate'))} {n} under the floor, too few cases to test"
    rate = f"{num.rate(cell.get('rate'))} {num.interval_or_reason(cell)} {n}"
    if cell.get("flagged"):
        return f"{rate} FLAGGED, Holm p={cell['p_holm']:.3f}"
    if not cell.get("below"):
        return rate
    return f"{rate} under the floor, not significant after Holm, Holm p={cell['p_holm']:.3f}"
