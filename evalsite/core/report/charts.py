"""The report's charts as inline SVG, drawn on the server (SPEC §11.8).

Each function takes the stored report and returns one complete ``<svg>`` element, with a
``<title>``, or a small "no data" SVG when the report lacks what it draws. Output is
deterministic (coordinates rounded to 0.1) and well-formed XML; every piece of text from
the report is escaped with :func:`evalsite.core.report.text.esc`. No CSS, script, link or
external reference: the SVG works inline in report.html and on its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

from evalsite.core.report import numbers as num
from evalsite.core.report.document import Context
from evalsite.core.report.matrix import matrix_of
from evalsite.core.report.text import esc

__all__ = ["confusion_svg", "cost_vs_winrate_svg", "kappa_curve_svg", "no_data_svg"]

SVG_NS = "http://www.w3.org/2000/svg"
INK, MUTED, ACCENT, BAND, WARN = "#1f2933", "#7b8794", "#1d4ed8", "#bfdbfe", "#b45309"
FONT = 'font-family="sans-serif" font-size="12"'
NAME_CHARS = 40
LINE_HEIGHT = 14
CATEGORIES = ("baseline", "candidate", "tie")
Ticks = Sequence[tuple[float, str]]


def px(value: float) -> str:
    return f"{value:.1f}"


def svg_document(title: str, width: int, height: int, body: Sequence[str]) -> str:
    return (
        f'<svg xmlns="{SVG_NS}" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img"><title>{esc(title)}</title>{"".join(body)}</svg>'
    )


def svg_text(x: float, y: float, text: str, anchor: str = "start", extra: str = "") -> str:
    return (
        f'<text x="{px(x)}" y="{px(y)}" text-anchor="{anchor}" fill="{INK}" {FONT}{extra}>'
        f"{esc(text, NAME_CHARS * 2)}</text>"
    )


def svg_line(
    x1: float, y1: float, x2: float, y2: float, colour: str = INK, dash: bool = False
) -> str:
    dashed = ' stroke-dasharray="6 4"' if dash else ""
    return (
        f'<line x1="{px(x1)}" y1="{px(y1)}" x2="{px(x2)}" y2="{px(y2)}" stroke="{colour}" '
        f'stroke-width="1.5"{dashed}/>'
    )


def no_data_svg(title: str, message: str = "no data") -> str:
    return svg_document(title, 360, 48, [svg_text(12, 28, f"{title}: {message}")])


def finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 × 10^k at or above ``value`` (value > 0)."""
    power = 10 ** math.floor(math.log10(value))
    return cast(
        float, next(step * power for step in (1, 2, 5, 10) if step * power >= value * (1 - 1e-12))
    )


@dataclass(frozen=True)
class Plot:
    """A plot area of ``width`` × ``height`` with margins, over [x0, x1] × [y0, y1]."""

    x0: float
    x1: float
    y0: float
    y1: float
    width: int = 600
    height: int = 340
    left: int = 70
    right: int = 150
    top: int = 30
    bottom: int = 50

    def x(self, value: float) -> float:
        span = self.width - self.left - self.right
        return self.left + (value - self.x0) / (self.x1 - self.x0) * span

    def y(self, value: float) -> float:
        span = self.height - self.top - self.bottom
        return self.top + (self.y1 - value) / (self.y1 - self.y0) * span

    def axes(self, x_ticks: Ticks, y_ticks: Ticks, x_title: str, y_title: str) -> list[str]:
        bottom, left = self.y(self.y0), self.x(self.x0)
        parts = [
            svg_line(left, bottom, self.x(self.x1), bottom),
            svg_line(left, bottom, left, self.top),
        ]
        for value, label in x_ticks:
            parts += [
                svg_line(self.x(value), bottom, self.x(value), bottom + 5),
                svg_text(self.x(value), bottom + 18, label, "middle"),
            ]
        for value, label in y_ticks:
            parts += [
                svg_line(left - 5, self.y(value), left, self.y(value)),
                svg_text(left - 8, self.y(value) + 4, label, "end"),
            ]
        middle_x = (left + self.x(self.x1)) / 2
        middle_y = (self.top + bottom) / 2
        parts.append(svg_text(middle_x, self.height - 10, x_title, "middle"))
        rotate = f' transform="rotate(-90 16 {px(middle_y)})"'
        parts.append(svg_text(16, middle_y, y_title, "middle", rotate))
        return parts


def axis_ticks(low: float, high: float, steps: int, label: Callable[[float], str]) -> Ticks:
    values = [low + (high - low) * i / steps for i in range(steps + 1)]
    return [(value, label(value)) for value in values]


def _even_ticks(high: float, *, whole: bool = False) -> tuple[float, list[float]]:
    """``(top, ticks)``: four or so evenly spaced round values from 0 to a top at or above
    ``high``; whole numbers only when ``whole`` (a count of labels is never 2.5)."""
    step = _nice_ceiling(high / 4) if high > 0 else 1.0
    if whole:
        step = max(1.0, round(step))
    steps = max(1, math.ceil(high / step - 1e-9))
    return step * steps, [step * i for i in range(steps + 1)]


def _money_tick(step: float) -> Callable[[float], str]:
    """Dollars with as many decimals as the step needs: $0.0005, $0.0010 (never
    $0.000500000); the same places on every tick of an axis."""
    digits = 2
    while digits < 9 and abs(round(step, digits) - step) > step * 1e-6:
        digits += 1
    return lambda value: f"${value:.{digits}f}"


def wrap_label(text: str, chars: int) -> list[str]:
    """``text`` in lines of at most ``chars`` characters, broken at spaces where it can be
    and inside a word (a model name) where it must."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        while len(word) > chars:
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:chars])
            word = word[chars:]
        if line and len(line) + 1 + len(word) > chars:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line or not lines else lines


@dataclass(frozen=True)
class _Point:
    name: str
    x: float  # cost if uncached, USD
    this_run: float | None  # cost this run, USD
    rate: float
    ci: Any


def _cost_points(ctx: Context) -> list[_Point]:
    """Each candidate with a win-rate, at what its answers cost without the cache (a
    cached rerun cost nothing this run and would sit at $0), this run's cost beside it."""
    win_rates, cards = ctx.get("win_rates"), ctx.get("per_contestant")
    points = []
    for name in ctx.candidates:
        row = win_rates[name] or {}
        cost = (cards.get(name) or {}).get("cost") or {}
        this_run = cost.get("usd") if finite(cost.get("usd")) else None
        uncached = cost.get("if_uncached_usd")
        x = uncached if finite(uncached) else (this_run or 0.0)
        if finite(row.get("win_rate")):
            points.append(_Point(name, x, this_run, row["win_rate"], row.get("ci")))
    return points


def cost_vs_winrate_svg(report: Mapping[str, Any]) -> str:
    """One numbered point per candidate: what its answers cost if uncached (x) against its
    win-rate (y), the interval as a vertical bar, the baseline as the line at 0.5; the
    names, figures and this run's cost in a legend under the plot, wrapped, never clipped."""
    ctx = Context.of(report)
    flag = "" if ctx.eligible else " (UNCALIBRATED)"
    title = "Cost if uncached against win-rate" + flag
    unpriced = _unpriced(report)
    rated = _cost_points(ctx)
    points = [point for point in rated if point.name not in unpriced]
    if not points:
        why = "all unpriced, not plotted" if rated else "no win-rates"
        return no_data_svg(title, f"no data ({why})")
    plot, body = cost_rate_plot(
        max(point.x for point in points),
        "cost if uncached of the candidate's answers (USD)",
        "win-rate" + flag,
    )
    body.append(svg_line(plot.x(0), plot.y(0.5), plot.x(plot.x1), plot.y(0.5), MUTED, dash=True))
    for point in points:
        body += _point_marks(plot, point)
    marks = [
        (plot.x(point.x), plot.y(point.rate) - 8, str(number))
        for number, point in enumerate(points, start=1)
    ]
    body += [svg_text(x, y, label) for x, y, label in apart(marks)]
    left_out = [point.name for point in rated if point.name in unpriced]
    legend, height = _legend(ctx, points, plot, left_out)
    return svg_document(title, plot.width, height, body + legend)


def _unpriced(report: Mapping[str, Any]) -> set[str]:
    """The contestants no price applied to: their cost is unknown, not $0."""
    cells = matrix_of(report)[0]["cells"]
    return {cell["contestant"] for cell in cells if not cell.get("priced", True)}


def money_ticks(top_cost: float) -> tuple[float, Ticks]:
    """``(top, ticks)`` of a money axis from $0 to at least ``top_cost``, labelled in
    dollars with the places the step needs."""
    top, values = _even_ticks(top_cost * 1.05) if top_cost > 0 else (0.01, [0.0, 0.01])
    money = _money_tick(values[1] - values[0])
    return top, [(value, money(value)) for value in values]


def cost_rate_plot(top_cost: float, x_title: str, y_title: str) -> tuple[Plot, list[str]]:
    """A plot of a cost from $0 (x) against a rate from 0 to 1 (y), and its axes."""
    top, x_ticks = money_ticks(top_cost)
    plot = Plot(0.0, top, 0.0, 1.0, right=30)
    return plot, plot.axes(x_ticks, axis_ticks(0.0, 1.0, 4, lambda v: f"{v:.2f}"), x_title, y_title)


def _point_marks(plot: Plot, point: _Point) -> list[str]:
    x, y, ci = plot.x(point.x), plot.y(point.rate), point.ci
    marks = []
    if ci and len(ci) == 2 and all(finite(v) for v in ci):
        low, high = plot.y(ci[0]), plot.y(ci[1])
        marks += [svg_line(x, low, x, high, ACCENT), svg_line(x - 4, low, x + 4, low, ACCENT)]
        marks.append(svg_line(x - 4, high, x + 4, high, ACCENT))
    marks.append(f'<circle cx="{px(x)}" cy="{px(y)}" r="5" fill="{ACCENT}"/>')
    return marks


def _legend(
    ctx: Context, points: list[_Point], plot: Plot, unpriced: Sequence[str] = ()
) -> tuple[list[str], int]:
    """The legend under the plot, each candidate's name on a line of its own and its
    figures under it, then the ``unpriced`` candidates left out; and the chart's height."""
    chars = (plot.width - 60) // 7  # a generous 7 px a character at 12 px sans-serif
    y = plot.height + 4
    body = [svg_line(20, y - 4, 44, y - 4, MUTED, dash=True)]
    lines: list[tuple[int, str]] = [(52, f"baseline {ctx.baseline} (win-rate 0.5)")]
    for number, point in enumerate(points, start=1):
        interval = num.interval(point.ci) or "no interval"
        this_run = short_money(point.this_run) if point.this_run is not None else num.MISSING
        lines.append((20, f"{number}  {point.name}"))
        lines.append(
            (44, f"win-rate {num.rate(point.rate)}{ctx.dagger} {interval} \u00b7 "
                 f"{short_money(point.x)} if uncached \u00b7 {this_run} this run")
        )  # fmt: skip
    if unpriced:
        count = f"{len(unpriced)} candidate{'s' if len(unpriced) != 1 else ''}"
        lines.append((20, f"{count} unpriced, not plotted: {', '.join(unpriced)}"))
    for x, text in lines:
        for line in wrap_label(text, chars - (x - 20) // 7):
            body.append(svg_text(x, y, line))
            y += LINE_HEIGHT + 2
    return body, int(y + 6)


def short_money(value: float) -> str:
    """Dollars to two significant figures below a cent ($0.0013), else to the cent's
    hundredth ($0.0827): a legend's figure, read at a glance."""
    if value == 0:
        return "$0"
    if abs(value) >= 0.01:
        return num.money(value, digits=4)
    return num.money(value, digits=1 - math.floor(math.log10(abs(value))))


def apart(labels: list[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """Point labels, top to bottom, each moved down until it overlaps none above it."""
    placed: list[tuple[float, float, str]] = []
    for x, y, text in sorted(labels, key=lambda label: (label[1], label[0], label[2])):
        while any(abs(y - other) < LINE_HEIGHT and abs(x - ox) < 20 for ox, other, _ in placed):
            y += LINE_HEIGHT
        placed.append((x, y, text))
    return [(x + 8, y, text) for x, y, text in placed]


def kappa_curve_svg(report: Mapping[str, Any]) -> str:
    """Judge–human kappa (y) as labels were added (x), its interval as a band, and the
    floor the headline needs."""
    cal = report.get("calibration") or {}
    title = "Judge\u2013human kappa against labels"
    points = sorted(
        (p["n"], p["kappa"], p.get("ci"))
        for p in cal.get("curve") or []
        if finite(p.get("n")) and finite(p.get("kappa"))
    )
    if not points:
        return no_data_svg(title, "no data (no kappa yet)")
    lows = [ci[0] for _, _, ci in points if ci and finite(ci[0])]
    floor = cal.get("min_kappa")
    y0 = min([0.0, *(k for _, k, _ in points), *lows, *([floor] if finite(floor) else [])])
    top, x_ticks = _even_ticks(max(points[-1][0], 1), whole=True)
    plot = Plot(0.0, top, math.floor(y0 * 4) / 4, 1.0, right=90)
    body = plot.axes(
        [(value, f"{value:.0f}") for value in x_ticks],
        axis_ticks(plot.y0, 1.0, round((1.0 - plot.y0) * 4), lambda v: f"{v:.2f}"),
        "labels (n)",
        "kappa",
    )
    banded = [(n, ci) for n, _, ci in points if ci and len(ci) == 2 and all(map(finite, ci))]
    if len(banded) >= 2:
        outline = [(n, ci[1]) for n, ci in banded] + [(n, ci[0]) for n, ci in reversed(banded)]
        coords = " ".join(f"{px(plot.x(n))},{px(plot.y(v))}" for n, v in outline)
        body.append(f'<polygon points="{coords}" fill="{BAND}" fill-opacity="0.7"/>')
    if finite(floor):
        body.append(svg_line(plot.x(0), plot.y(floor), plot.x(plot.x1), plot.y(floor), WARN, True))
        body.append(svg_text(plot.x(plot.x1) + 6, plot.y(floor) + 4, f"floor {floor:.2f}"))
    coords = " ".join(f"{px(plot.x(n))},{px(plot.y(k))}" for n, k, _ in points)
    body.append(f'<polyline points="{coords}" fill="none" stroke="{ACCENT}" stroke-width="2"/>')
    body += [
        f'<circle cx="{px(plot.x(n))}" cy="{px(plot.y(k))}" r="3" fill="{ACCENT}"/>'
        for n, k, _ in points
    ]
    return svg_document(title, plot.width, plot.height, body)


def confusion_svg(report: Mapping[str, Any]) -> str:
    """The 3×3 confusion matrix as a heat map: rows human, columns judge."""
    matrix = (report.get("calibration") or {}).get("confusion") or []
    title = "Confusion matrix: rows human, columns judge"
    valid = len(matrix) == 3 and all(len(row) == 3 and all(map(finite, row)) for row in matrix)
    total = sum(sum(row) for row in matrix) if valid else 0
    if not total:
        return no_data_svg(title, "no data (no labels)")
    largest = max(max(row) for row in matrix)
    cell_w, cell_h, left, top = 90, 50, 110, 50
    body = [
        svg_text(left + cell_w * 1.5, 18, "judge \u2192", "middle"),
        svg_text(12, top - 10, "human \u2193"),
    ]
    for col, name in enumerate(CATEGORIES):
        body.append(svg_text(left + cell_w * (col + 0.5), top - 10, name, "middle"))
    for row_index, (name, row) in enumerate(zip(CATEGORIES, matrix, strict=True)):
        y = top + row_index * cell_h
        body.append(svg_text(left - 10, y + cell_h / 2 + 4, name, "end"))
        for col, value in enumerate(row):
            x, share = left + col * cell_w, value / largest
            body.append(
                f'<rect x="{x}" y="{y}" width="{cell_w}" height="{cell_h}" fill="{ACCENT}" '
                f'fill-opacity="{0.08 + 0.8 * share:.2f}" stroke="#ffffff"/>'
            )
            colour = "#ffffff" if share > 0.5 else INK
            body.append(
                f'<text x="{px(x + cell_w / 2)}" y="{px(y + cell_h / 2 + 5)}" '
                f'text-anchor="middle" fill="{colour}" {FONT}>{num.count(value)}</text>'
            )
    return svg_document(title, left + 3 * cell_w + 20, top + 3 * cell_h + 20, body)
