"""The terminal summary of ``evalsite run`` (SPEC §13), from the stored report.

Text from the report is passed through :func:`~evalsite.core.report.text.visible`, so a
name or a detail cannot move the cursor, recolour the terminal or reorder the line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.document import Context
from evalsite.core.report.overview import cost_text
from evalsite.core.report.text import visible

__all__ = ["summary_lines"]


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    ctx = Context.of(report)
    suite = (report.get("suite") or {}).get("name")
    path = visible(report.get("report_path") or ".").rstrip("/")
    lines = [f"run {visible(report.get('run_id'))}  ({visible(suite)})"]
    if report.get("status") != "done":
        status = f"  status: {visible(report.get('status') or 'unknown')}"
        detail = visible(report.get("detail"))
        lines.append(f"{status} - {detail}" if detail else status)
    lines += [f"  report: {path}/report.md", _calibration_line(ctx)]
    if not report.get("judge"):
        lines.append("  no judge: no win-rates")
    else:
        lines += [_win_rate_line(ctx, name) for name in ctx.candidates]
    lines.append("  cost: " + cost_text(ctx.get("totals")))
    lines += _gate_lines(report.get("gates") or [])
    return lines


def _gate_lines(gates: list) -> list[str]:
    """One line per failed (or skipped) gate, naming its figure; one line when all pass."""
    if not gates:
        return []
    failed = [g for g in gates if g.get("status") == "failed"]
    skipped = [g for g in gates if g.get("status") == "skipped"]
    lines = [f"  gate failed: {g.get('gate')} - {visible(g.get('message', ''))}" for g in failed]
    lines += [f"  gate skipped: {g.get('gate')} - {visible(g.get('message', ''))}" for g in skipped]
    if not failed:
        lines.append(f"  gates: {len(gates) - len(skipped)} passed")
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
    eligible = "true" if ctx.eligible else "false"
    return f"  calibration: {visible(status)} - {measured} - headline eligible: {eligible}"


def _win_rate_line(ctx: Context, name: str) -> str:
    row = ctx.get("win_rates")[name] or {}
    flag = "" if ctx.eligible else " (UNCALIBRATED)"
    n = row.get("n") or 0
    interval = num.interval(row.get("ci")) or ("[no interval: n<8]" if n < 8 else "[no interval]")
    line = (
        f"  {visible(name)} vs {visible(row.get('vs') or ctx.baseline)}: win-rate "
        f"{num.rate(row.get('win_rate'))}{flag} {interval} over schema-passing pairs only, "
        f"n={num.count(n)} - flips {num.count(row.get('flips', 0))} - excluded "
        f"{num.count(row.get('excluded', 0))}"
    )
    if row.get("flip_warning"):
        line += f" - flip rate {num.rate(row.get('flip_rate'))} measures order, not quality"
    return line
