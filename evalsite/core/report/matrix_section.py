"""The matrix and the frontier as the report's "Matrix" section and as the terminal's
table and lines, from the same rows and the same sentences.

Names are the report's (model strings and variants from the suite): the section holds
them as :class:`Code`, the terminal passes them through :func:`visible`. The sentences
state the frontier's facts and nothing more: "highest score", "cheapest within 5 points of
the highest", "not beaten on both score and cost".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalsite.core.report import numbers as num
from evalsite.core.report.document import Block, Cell, Code, Context, Items, Para, Section, Table
from evalsite.core.report.document import cells as parts_of
from evalsite.core.report.matrix import COST_BASIS, matrix_of, variant_label
from evalsite.core.report.text import visible

__all__ = [
    "CELL_HEAD", "cell_rows", "frontier_facts", "grid_rows", "matrix_section", "score_from_text",
]  # fmt: skip

CELL_HEAD = ("model", "variant", "score", "pass/scored", "errors", "tokens in/out", "cost",
             "if uncached", "per scored", "p50")  # fmt: skip
NOT_RUN = "-"
SCORE_FROM = {
    "scorecard": "the scorecard's weighted score",
    "pass_rate": "the share of scored answers that passed every verdict (no scorecard)",
}

Row = Mapping[str, Any]


def score_from_text(matrix: Row) -> str:
    return SCORE_FROM.get(str(matrix.get("score_from")), SCORE_FROM["pass_rate"])


def _score(cell: Row) -> str:
    return num.rate(cell.get("score"))


def _money(cell: Row, key: str) -> str:
    return "unpriced" if not cell.get("priced", True) else num.money(cell.get(key))


def _ms(value: Any) -> str:
    return num.MISSING if value is None else f"{int(value)} ms"


def cell_rows(matrix: Row) -> list[tuple[str, ...]]:
    """One row of plain figures per cell, in contestant order; the names first, raw."""
    rows: list[tuple[str, ...]] = []
    for cell in matrix.get("cells") or ():
        tokens = cell.get("tokens") or {}
        rows.append((
            str(cell.get("model") or ""),
            variant_label(cell.get("variant")),
            _score(cell),
            f"{num.count(cell.get('passed'))}/{num.count(cell.get('scored'))}",
            num.count(cell.get("errors")),
            f"{num.count(tokens.get('input'))}/{num.count(tokens.get('output'))}",
            _money(cell, "cost_usd"),
            _money(cell, "cost_if_uncached_usd"),
            _money(cell, "cost_per_scored_usd"),
            _ms(cell.get("latency_p50_ms")),
        ))  # fmt: skip
    return rows


def grid_rows(matrix: Row) -> list[tuple[str, ...]]:
    """Models down, variants across, each cell its score and pass/scored; ``-`` where a
    model was not run with a variant. Empty when the contestants do not form a grid."""
    if not matrix.get("grid"):
        return []
    by_place = {(c.get("model"), c.get("variant")): c for c in matrix.get("cells") or ()}
    variants = list(matrix.get("variants") or ())
    rows = []
    for model in matrix.get("models") or ():
        row = [str(model)]
        for variant in variants:
            cell = by_place.get((model, variant))
            row.append(
                f"{_score(cell)} ({num.count(cell.get('passed'))}/{num.count(cell.get('scored'))})"
                if cell
                else NOT_RUN
            )
        rows.append(tuple(row))
    return rows


def _names(names: list[str]) -> tuple[Cell, ...]:
    parts: list[Any] = []
    for index, name in enumerate(names):
        parts += [", ", Code(name)] if index else [Code(name)]
    return tuple(parts)


def frontier_facts(frontier: Row) -> list[tuple[Cell, ...]]:
    """The frontier's facts, one sentence each, as parts (names as :class:`Code`)."""
    points = frontier.get("points")
    within = f"cheapest within {_points(points)} points of the highest ({COST_BASIS})"
    facts: list[tuple[Cell, ...]] = []
    if frontier.get("highest"):
        facts.append(("highest score: ", *_names(frontier["highest"]),
                      f" ({num.rate(frontier.get('highest_score'))})"))  # fmt: skip
    else:
        facts.append(("highest score: none (no cell has a score)",))
    if frontier.get("cheapest_within"):
        cost = num.money(frontier.get("cheapest_within_cost_usd"))
        facts.append((f"{within}: ", *_names(frontier["cheapest_within"]), f" ({cost})"))
    else:
        facts.append((f"{within}: none (no priced cell with a score)",))
    if frontier.get("not_beaten"):
        facts.append(("not beaten on both score and cost: ", *_names(frontier["not_beaten"])))
    else:
        facts.append(("not beaten on both score and cost: none (no priced cell with a score)",))
    if frontier.get("no_score"):
        facts.append(("no score (no answer scored, or no pass count), left off: ",
                      *_names(frontier["no_score"])))  # fmt: skip
    if frontier.get("unpriced"):
        facts.append(("unpriced (cost unknown), left off the cost facts: ",
                      *_names(frontier["unpriced"])))  # fmt: skip
    return facts


def _points(points: Any) -> str:
    value = float(points if points is not None else 5)
    return f"{value:g}"


def plain(fact: tuple[Cell, ...], limit: int | None = None) -> str:
    """A fact as one terminal line: its names through :func:`visible`."""
    return "".join(
        visible(part.text, limit) if isinstance(part, Code) else part
        for cell in fact
        for part in parts_of(cell)
    )


# --- the report's section --------------------------------------------------------------------


def matrix_section(ctx: Context) -> Section:
    matrix, frontier = matrix_of(ctx.report)
    if not matrix.get("cells"):
        return Section("matrix", "Matrix", (Para("No contestants."),))
    intro = (
        "One cell per contestant (model, or model@variant; (base) is the suite's own prompt). "
        f"Score: {score_from_text(matrix)}. Errors are left out of the score, never scored 0."
    )
    blocks: list[Block] = [Para(intro)]
    grid = grid_rows(matrix)
    if grid:
        blocks.append(Para("Score (pass/scored): models down, variants across; - not run."))
        head: tuple[Cell, ...] = ("model", *(Code(variant_label(v)) for v in matrix["variants"]))
        grid_cells: tuple[tuple[Cell, ...], ...] = tuple((Code(row[0]), *row[1:]) for row in grid)
        blocks.append(Table(head, grid_cells))
    rows: tuple[tuple[Cell, ...], ...] = tuple(
        (Code(row[0]), Code(row[1]), *row[2:]) for row in cell_rows(matrix)
    )
    blocks.append(Table(CELL_HEAD, rows))
    blocks.append(Para("The frontier, as facts:"))
    blocks.append(Items(tuple(_fact_cell(fact) for fact in frontier_facts(frontier))))
    return Section("matrix", "Matrix", tuple(blocks))


def _fact_cell(fact: tuple[Cell, ...]) -> Cell:
    return tuple(part for cell in fact for part in parts_of(cell))
