"""A suite's runs side by side: each run's figures as points, and two charts of them, drawn
on the server as inline SVG like the report's (:mod:`evalsite.core.report.charts`).

A point is one contestant in one run: its win-rate with the interval when the run judged
pairs, else its score (the matrix's: the scorecard's or the pass rate), and what its answers
cost if uncached. A contestant no price applied to has no cost: it is left out of the cost
axes and said so under the chart ("2 points unpriced, not plotted"), never drawn at $0.
Runs that measured something else than the newest run (a win-rate where the newest has a
score) are left out of the quality axes and said so too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.charts import (
    MUTED,
    Plot,
    apart,
    axis_ticks,
    cost_rate_plot,
    finite,
    money_ticks,
    no_data_svg,
    px,
    short_money,
    svg_document,
    svg_line,
    svg_text,
    wrap_label,
)
from evalsite.core.report.matrix import matrix_of

__all__ = ["RunPoint", "cost_quality_svg", "run_points", "runs_over_time_svg", "unplotted"]

WIN_RATE, SCORE = "win-rate", "score"
# one colour a contestant, in the order they first appear; more than six share colours
PALETTE = ("#1d4ed8", "#b45309", "#047857", "#7c3aed", "#be123c", "#0e7490")


@dataclass(frozen=True)
class RunPoint:
    """One contestant in one run (``run`` is its label or short id, ``when`` its start)."""

    run: str
    when: str
    contestant: str
    measure: str  # WIN_RATE or SCORE
    value: float
    ci: tuple[float, float] | None
    cost_usd: float | None  # if uncached; None when no price applied
    eligible: bool = True  # a win-rate the calibration gate allows as a headline
    run_cost_usd: float | None = None  # the whole run's if uncached; None when not all priced

    @property
    def interval(self) -> str:
        return num.interval(self.ci) or "no interval"

    @property
    def cost(self) -> str:
        return "unpriced" if self.cost_usd is None else short_money(self.cost_usd)


def run_points(run: str, when: str, report: Mapping[str, Any]) -> list[RunPoint]:
    """The points of one run's report: its candidates' win-rates when it has any, else each
    contestant's score; a run with neither has no point."""
    cells = {cell["contestant"]: cell for cell in matrix_of(report)[0]["cells"]}
    win_rates = report.get("win_rates") or {}
    eligible = report.get("headline_eligible") is True
    rated = {n: r for n, r in win_rates.items() if finite((r or {}).get("win_rate"))}
    figures = (
        [(n, WIN_RATE, r["win_rate"], _ci(r.get("ci"))) for n, r in rated.items()]
        if rated
        else [(n, SCORE, c["score"], None) for n, c in cells.items() if finite(c.get("score"))]
    )
    total = (report.get("totals") or {}).get("cost_if_uncached_usd")
    priced = all(cell.get("priced", True) for cell in cells.values())
    run_cost = float(total) if priced and finite(total) else None
    return [
        RunPoint(
            run, when, name, measure, float(value), ci, _cost(cells.get(name)), eligible, run_cost
        )  # fmt: skip
        for name, measure, value, ci in figures
    ]


def _ci(ci: Any) -> tuple[float, float] | None:
    if isinstance(ci, Sequence) and len(ci) == 2 and all(finite(v) for v in ci):
        return float(ci[0]), float(ci[1])
    return None


def _cost(cell: Mapping[str, Any] | None) -> float | None:
    if not cell or not cell.get("priced", True):
        return None
    cost = cell.get("cost_if_uncached_usd")
    return float(cost) if finite(cost) else None


def _measured(points: Sequence[RunPoint]) -> tuple[str, list[RunPoint]]:
    """The newest run's measure and the points that share it (points are oldest first)."""
    measure = points[-1].measure if points else SCORE
    return measure, [p for p in points if p.measure == measure]


def unplotted(points: Sequence[RunPoint], *, runs: bool = True, scatter: bool = True) -> list[str]:
    """What the charts leave out, each said once: other measures, unpriced runs (the runs
    chart's cost panel), unpriced points (the scatter)."""
    measure, kept = _measured(points)
    notes = []
    if other := len(points) - len(kept):
        notes.append(f"{_n(other, 'point')} measured another figure than the newest run's "
                     f"{measure}, not plotted")  # fmt: skip
    unpriced_runs = {p.run for p in kept if p.run_cost_usd is None}
    if runs and unpriced_runs:
        notes.append(f"{_n(len(unpriced_runs), 'run')} unpriced, not plotted on the run cost")
    if scatter and (unpriced := sum(1 for p in kept if p.cost_usd is None)):
        notes.append(f"{_n(unpriced, 'point')} unpriced, not plotted on the cost axis")
    return notes


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def _colours(points: Sequence[RunPoint]) -> dict[str, str]:
    names = dict.fromkeys(p.contestant for p in points)
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _flag(points: Sequence[RunPoint]) -> str:
    ineligible = any(p.measure == WIN_RATE and not p.eligible for p in points)
    return " (some UNCALIBRATED)" if ineligible else ""


def runs_over_time_svg(points: Sequence[RunPoint]) -> str:
    """Each run (x, oldest first) and each contestant's figure in it (y), its interval as a
    vertical bar, one colour a contestant; each run's cost if uncached in a panel under it;
    the runs, contestants and what was left out in a legend under both."""
    measure, kept = _measured(points)
    title = f"The suite's runs over time: {measure}" + _flag(kept)
    runs = list(dict.fromkeys((p.run, p.when) for p in kept))
    if not runs:
        return no_data_svg(title, "no data (no finished run with a figure)")
    plot = Plot(0.5, len(runs) + 0.5, 0.0, 1.0, right=30)
    body = plot.axes(
        [(i, str(i)) for i in range(1, len(runs) + 1)],
        axis_ticks(0.0, 1.0, 4, lambda v: f"{v:.2f}"),
        "run (oldest first; numbered in the legend)",
        measure + _flag(kept),
    )
    colours, index = _colours(kept), {run: i for i, run in enumerate(runs, start=1)}
    series = len(colours)
    for p in kept:
        slot = list(colours).index(p.contestant)
        x = plot.x(index[(p.run, p.when)] + (slot - (series - 1) / 2) * 0.12)
        body += _marks(plot, x, p, colours[p.contestant])
    costs = {(p.run, p.when): p.run_cost_usd for p in kept}
    panel, bars = _run_costs(plot, [costs[run] for run in runs])
    lines = [
        f"{i}  {run} \u00b7 {when} \u00b7 "
        + ("unpriced" if costs[(run, when)] is None else f"{short_money(costs[(run, when)] or 0)}")
        for i, (run, when) in enumerate(runs, start=1)
    ]
    legend, height = _legend(panel, colours, lines + unplotted(points, scatter=False))
    return svg_document(title, plot.width, height, body + bars + legend)


def _run_costs(plot: Plot, costs: list[float | None]) -> tuple[Plot, list[str]]:
    """A panel under ``plot``: each run's cost if uncached as a bar, an unpriced run as the
    word, never a bar at $0; the panel (the legend goes under it) and its marks."""
    top, y_ticks = money_ticks(max((c for c in costs if c is not None), default=0.0))
    panel = Plot(plot.x0, plot.x1, 0.0, top, height=plot.height + 150, top=plot.height + 20,
                  right=plot.right)  # fmt: skip
    body = panel.axes(
        [(i, str(i)) for i in range(1, len(costs) + 1)],
        [y_ticks[0], y_ticks[-1]],
        "run",
        "cost if uncached",
    )
    for i, cost in enumerate(costs, start=1):
        if cost is None:
            body.append(svg_text(panel.x(i), panel.y(0) - 6, "unpriced", "middle"))
            continue
        y = panel.y(cost)
        body.append(
            f'<rect x="{px(panel.x(i) - 10)}" y="{px(y)}" width="20" '
            f'height="{px(panel.y(0) - y)}" fill="{MUTED}"/>'
        )
    return panel, body


def cost_quality_svg(points: Sequence[RunPoint]) -> str:
    """Each priced point: what the contestant's answers cost if uncached in that run (x)
    against its figure (y), numbered, the numbers read in the legend under the plot."""
    measure, kept = _measured(points)
    title = f"Cost against {measure} across runs" + _flag(kept)
    priced = [p for p in kept if p.cost_usd is not None]
    if not priced:
        why = "all unpriced, not plotted" if kept else "no finished run with a figure"
        return no_data_svg(title, f"no data ({why})")
    plot, body = cost_rate_plot(
        max(p.cost_usd or 0.0 for p in priced),
        "cost if uncached of the contestant's answers in the run (USD)",
        measure + _flag(kept),
    )
    colours = _colours(priced)
    for p in priced:
        body += _marks(plot, plot.x(p.cost_usd or 0.0), p, colours[p.contestant])
    numbered = [
        (plot.x(p.cost_usd or 0.0), plot.y(p.value) - 8, str(n))
        for n, p in enumerate(priced, start=1)
    ]
    body += [svg_text(x, y, label) for x, y, label in apart(numbered)]
    lines = [
        f"{n}  {p.run}: {p.contestant} {num.rate(p.value)} at {p.cost}"
        for n, p in enumerate(priced, start=1)
    ]
    legend, height = _legend(plot, colours, lines + unplotted(points, runs=False))
    return svg_document(title, plot.width, height, body + legend)


def _marks(plot: Plot, x: float, point: RunPoint, colour: str) -> list[str]:
    marks = []
    if point.ci is not None:
        low, high = plot.y(point.ci[0]), plot.y(point.ci[1])
        marks += [svg_line(x, low, x, high, colour), svg_line(x - 4, low, x + 4, low, colour)]
        marks.append(svg_line(x - 4, high, x + 4, high, colour))
    marks.append(f'<circle cx="{px(x)}" cy="{px(plot.y(point.value))}" r="4" fill="{colour}"/>')
    return marks


def _legend(plot: Plot, colours: Mapping[str, str], lines: list[str]) -> tuple[list[str], int]:
    """The colour of each contestant, then ``lines``, wrapped under the plot; and the
    chart's height with them."""
    chars = (plot.width - 60) // 7  # a generous 7 px a character at 12 px sans-serif
    y = plot.height + 4
    body = []
    for name, colour in colours.items():
        body.append(f'<circle cx="26" cy="{px(y - 4)}" r="4" fill="{colour}"/>')
        for line in wrap_label(name, chars - 4):
            body.append(svg_text(38, y, line))
            y += 16
    for text in lines:
        for line in wrap_label(text, chars):
            body.append(svg_text(20, y, line))
            y += 16
    return body, int(y + 6)
