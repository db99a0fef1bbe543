"""The terminal summary of ``evalsite run`` and ``evalsite last`` (SPEC §13), from the
stored report: the SPEC's lines (:func:`summary_lines`, which CI reads), then a table per
contestant and the warnings (:func:`terminal_summary`). The one-line headline of
``evalsite list`` is :mod:`~evalsite.core.report.measured`'s, as the run page's.

Text from the report is passed through :func:`~evalsite.core.report.text.visible`, so a
name or a detail cannot move the cursor, recolour the terminal or reorder the line. Colour
is this module's own escape codes only, and only when the caller asks for it
(:func:`wants_colour`: a terminal, and no ``NO_COLOR``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.card import group_warnings
from evalsite.core.report.document import Context
from evalsite.core.report.judge_text import judge_figure_lines, kappa_more_text
from evalsite.core.report.matrix import matrix_of, variant_label
from evalsite.core.report.matrix_section import (
    CELL_HEAD,
    cell_rows,
    frontier_facts,
    grid_rows,
    plain,
    score_from_text,
)  # fmt: skip
from evalsite.core.report.measured import UNCALIBRATED
from evalsite.core.report.overview import cost_text
from evalsite.core.report.text import visible
from evalsite.core.scoring.aggregate import cases_text

__all__ = [
    "aligned", "contestant_table", "gate_lines", "matrix_lines", "summary_lines",
    "terminal_summary", "warning_lines", "wants_colour",
]  # fmt: skip

ONE_CONTESTANT = "one contestant: no pairs, no win-rates (checks and pass rates only)"
_STYLES = {"head": "1", "bad": "31", "warn": "33", "good": "32"}


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    ctx = Context.of(report)
    suite = (report.get("suite") or {}).get("name")
    path = visible(report.get("report_path") or ".").rstrip("/")
    no_look = "  no-look run" if report.get("no_look") else ""
    lines = [f"run {visible(report.get('run_id'))}  ({visible(suite)}){no_look}"]
    if report.get("status") != "done":
        status = f"  status: {visible(report.get('status') or 'unknown')}"
        detail = visible(report.get("detail"))
        lines.append(f"{status} - {detail}" if detail else status)
    lines.append(f"  report: {path}/report.md")
    if ctx.one_contestant:  # evalpin's run: its pass^k and pass@k
        lines += [f"  {ONE_CONTESTANT}", *_pass_k_lines(report)]
    else:
        lines += [_calibration_line(ctx), *_win_rate_lines(ctx)]
    lines += judge_figure_lines(report)  # corrected and length-controlled win-rates
    lines.append("  cost: " + cost_text(ctx.get("totals")))
    lines += gate_lines(report.get("gates") or [])
    return lines


def _win_rate_lines(ctx: Context) -> list[str]:
    if not ctx.report.get("judge"):
        return ["  no judge: no win-rates"]
    if not ctx.report.get("pairwise", True):
        return ["  no task is judged in pairs: no win-rates (the judge grades answers)"]
    return [_win_rate_line(ctx, name) for name in ctx.candidates]


def _pass_k_lines(report: Mapping[str, Any]) -> list[str]:
    """With k > 1 attempts a case: per contestant, the cases that passed all k (pass^k)
    and at least one (pass@k)."""
    lines = []
    for name, figures in (report.get("per_contestant") or {}).items():
        k = (figures.get("pass_k") or {}).get("k") or 1
        if k < 2:
            continue
        pk = figures["pass_k"]
        cases = num.count(pk.get("estimated", pk.get("cases", 0)))
        line = (
            f"  {visible(name)}: pass^{k} {_cases_passed(pk.get('pass_all'))}/{cases}, "
            f"pass@{k} {_cases_passed(pk.get('pass_any'))}/{cases}"
        )
        if pk.get("short"):  # a stopped run: never taken for k attempts
            line += f"; {cases_text(pk['short'])} with fewer than {k} attempts left out"
        lines.append(line)
    return lines


def _cases_passed(value: float | None) -> str:
    """A count of cases; the summed estimate to 2 places where a case had more than k
    attempts."""
    value = value or 0
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def gate_lines(gates: list[Any], *, verdicts_only: bool = False) -> list[str]:
    """One line per failed, not evaluated (a contestant not in the run) or skipped gate,
    naming its figure; one line when none failed. `verdicts_only`: the failed and not
    evaluated lines alone (`run --json` writes them to stderr)."""
    if not gates:
        return []
    lines = []
    for status, words in (("failed", "failed"), ("not_evaluated", "not evaluated")) + (
        () if verdicts_only else (("skipped", "skipped"),)
    ):
        lines += [
            f"  gate {words}: {g.get('gate')} - {visible(g.get('message', ''))}"
            for g in gates
            if g.get("status") == status
        ]
    if not verdicts_only and not any(g.get("status") == "failed" for g in gates):
        passed = sum(1 for g in gates if g.get("status") == "passed")
        lines.append(f"  gates: {passed} passed")
    return lines


def _calibration_line(ctx: Context) -> str:
    cal = ctx.get("calibration")
    status = cal.get("status") or "unknown"
    if status == "no_labels":
        measured = "no labels"
    elif cal.get("kappa") is None:
        measured = f"kappa undefined over {num.count(cal.get('n', 0))} labels"
    else:
        kappa = num.kappa(cal["kappa"], cal.get("kappa_band"))
        measured = f"kappa {kappa} over {num.count(cal.get('n', 0))} labels"
        if more := kappa_more_text(cal):
            measured += f" ({more})"
    eligible = "true" if ctx.eligible else "false"
    return f"  calibration: {visible(status)} - {measured} - headline eligible: {eligible}"


def _win_rate_line(ctx: Context, name: str) -> str:
    row = ctx.get("win_rates")[name] or {}
    flag = "" if ctx.eligible else " (UNCALIBRATED)"
    interval = _interval(row)
    line = (
        f"  {visible(name)} vs {visible(row.get('vs') or ctx.baseline)}: win-rate "
        f"{num.rate(row.get('win_rate'))}{flag} {interval} over schema-passing pairs only, "
        f"n={num.cases(row)} - flips {num.count(row.get('flips', 0))} - excluded "
        f"{num.count(row.get('excluded', 0))}"
    )
    if row.get("flip_warning"):
        line += f" - flip rate {num.rate(row.get('flip_rate'))} measures order, not quality"
    return line


def _interval(row: Mapping[str, Any]) -> str:
    return num.interval_or_reason(row)


# --- the table per contestant, and the warnings -----------------------------------------------


def terminal_summary(report: Mapping[str, Any], *, colour: bool = False) -> list[str]:
    """What `run` and `last` print: the SPEC's lines (and pass^k / pass@k where they are
    not among them), the table, the matrix and its frontier, the warnings."""
    pass_k = [] if Context.of(report).one_contestant else _pass_k_lines(report)
    return [*summary_lines(report), *pass_k, *contestant_table(report, colour=colour),
            *matrix_lines(report, colour=colour),
            *warning_lines(report, colour=colour)]  # fmt: skip


def matrix_lines(report: Mapping[str, Any], *, colour: bool = False) -> list[str]:
    """The matrix as an aligned table per cell (and models × variants when they form a
    grid), then the frontier's facts, one line each."""
    matrix, frontier = matrix_of(report)
    rows = [tuple(visible(cell, 48) for cell in row) for row in cell_rows(matrix)]
    if not rows:
        return []
    title = f"matrix (score: {score_from_text(matrix)}):"
    lines = [f"  {_paint(title, 'head') if colour else title}"]
    lines += _table([CELL_HEAD, *rows], colour)
    grid = [tuple(visible(cell, 48) for cell in row) for row in grid_rows(matrix)]
    if grid:
        head = ("model", *(visible(variant_label(v), 48) for v in matrix.get("variants") or ()))
        lines.append("  score (pass/scored), models down, variants across:")
        lines += _table([head, *grid], colour)
    lines.append("  frontier:")
    lines += [f"    {plain(fact, 48)}" for fact in frontier_facts(frontier)]
    return lines


def _table(rows: list[tuple[str, ...]], colour: bool) -> list[str]:
    styles = [("head",) * len(rows[0])] + [("",) * len(row) for row in rows[1:]]
    return aligned(rows, styles=styles if colour else None, indent="    ")


def contestant_table(report: Mapping[str, Any], *, colour: bool = False) -> list[str]:
    """One aligned row per contestant: schema and checks pass rates, the win-rate with its
    interval (or UNCALIBRATED), errors, tokens, cost this run and if uncached."""
    ctx = Context.of(report)
    cards = ctx.get("per_contestant")
    if not ctx.contestants:
        return []
    head = ("contestant", "schema", "checks", "win-rate", "errors", "tokens in/out", "cost",
            "if uncached")  # fmt: skip
    rows: list[tuple[str, ...]] = [head]
    styles: list[tuple[str, ...]] = [("head",) * len(head)]
    for name in ctx.contestants:
        card = cards.get(name) or {}
        win_rate, win_style = _win_rate_cell(ctx, name)
        tokens, cost = card.get("tokens") or {}, card.get("cost") or {}
        errors = card.get("errors") or 0
        rows.append((
            visible(name, 48),
            num.rate((card.get("schema") or {}).get("rate")),
            num.rate((card.get("checks") or {}).get("rate")),
            win_rate,
            num.count(errors),
            f"{num.count(tokens.get('input'))}/{num.count(tokens.get('output'))}",
            num.money(cost.get("usd"), digits=4),
            num.money(cost.get("if_uncached_usd"), digits=4),
        ))  # fmt: skip
        styles.append(("", "", "", win_style, "bad" if errors else "", "", "", ""))
    return aligned(rows, styles=styles if colour else None, indent="  ")


def _win_rate_cell(ctx: Context, name: str) -> tuple[str, str]:
    if ctx.one_contestant:
        return "-", ""
    if name == ctx.baseline:
        return "baseline", ""
    if not ctx.report.get("judge"):
        return "no judge", ""
    if not ctx.report.get("pairwise", True):
        return "no pairs", ""  # the judge only grades: there is no win-rate to calibrate
    row = ctx.get("win_rates").get(name)
    if not row:
        return num.MISSING, ""
    if not ctx.eligible:
        return UNCALIBRATED, "warn"
    return f"{num.rate(row.get('win_rate'))} {_interval(row)}", "good"


def warning_lines(report: Mapping[str, Any], *, colour: bool = False) -> list[str]:
    """The report's warnings, one line each, except the tags below the pass-rate floor:
    each contestant's share one line ("scripted/sloppy: 3 tags pass below 0.70: …")."""
    shown = [
        f"{group.title}: {', '.join(group.items)}" if group.items else group.title
        for group in group_warnings(report)  # the run page's and report's grouping too
    ]
    if not shown:
        return []
    title = _paint("warnings:", "warn") if colour else "warnings:"
    return [f"  {title}", *(f"    {line}" for line in shown)]


def aligned(
    rows: Sequence[Sequence[str]],
    *,
    styles: Sequence[Sequence[str]] | None = None,
    indent: str = "",
) -> list[str]:
    """Rows of plain cells as aligned lines (two spaces between columns, the last one not
    padded). With `styles`, a cell with a style name is coloured after it is padded, so
    the escape codes never shift a column."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for r, row in enumerate(rows):
        cells = []
        for i, cell in enumerate(row):
            padded = cell if i == len(row) - 1 else cell.ljust(widths[i])
            style = styles[r][i] if styles else ""
            cells.append(_paint(padded, style) if style else padded)
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def _paint(text: str, style: str) -> str:
    return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


def wants_colour(stream: Any, env: Mapping[str, str]) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set to anything but ""
    (https://no-color.org)."""
    if env.get("NO_COLOR", ""):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
