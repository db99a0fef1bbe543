"""The variants × models matrix of a run and the cost–quality frontier beside it, as facts.

A contestant is ``model`` or ``model@variant``; each is one *cell*. The matrix lists the
models (its rows: long names read best down the side of a terminal) and the variants (its
columns: short identifiers; ``None`` is the suite's own prompt, shown as ``(base)``), and per
cell the score, pass / scored counts, errors (left out of the score, never scored 0),
tokens, cost this run and if uncached, and the p50 latency.

The score is the scorecard's (``report["scorecard"]["cells"]``) when the report has one,
else the share of scored answers that passed every verdict; ``score_from`` says which
(``pass_rate`` also for a scorecard without criteria, which scores a cell that way).

The frontier states three facts and no preference (the evalmine rule): the cells with the
highest score; the cells that cost least, if uncached per scored answer, among those within
``points`` (on the 0–100 scale) of the highest; and the cells not beaten on both score and
cost. Cells without a score (every answer errored) or without a price are left off the facts
that need them, and listed as left off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, cast

from evalsite.core.pricing import UNPRICED_PROVIDERS

__all__ = [
    "BASE", "DEFAULT_POINTS", "build_frontier", "build_matrix", "matrix_of", "matrix_report",
    "pass_share", "split_contestant", "unpriced_contestants", "variant_label",
]  # fmt: skip

BASE = "(base)"
DEFAULT_POINTS = 5.0
COST_BASIS = "if uncached, per scored answer"
_PLACES = 9  # scores and costs equal to this many places are a tie


class _Answer(Protocol):
    @property
    def contestant(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def cost_if_uncached_usd(self) -> float | None: ...


def pass_share(cell: Mapping[str, Any]) -> float | None:
    """A matrix or scorecard cell's passed / scored; None when it scored nothing."""
    if not cell.get("scored") or cell.get("passed") is None:
        return None
    return cast(float, cell["passed"] / cell["scored"])


def split_contestant(name: str) -> tuple[str, str | None]:
    """``("model", "variant")`` of ``model@variant``; the variant is None without one."""
    model, at, variant = name.partition("@")
    return model, (variant if at else None)


def variant_label(variant: str | None) -> str:
    return BASE if variant is None else variant


def unpriced_contestants(answers: Iterable[_Answer]) -> frozenset[str]:
    """The contestants with a finished answer that has no cost (no price row applied)."""
    return frozenset(
        a.contestant for a in answers if a.status == "done" and a.cost_if_uncached_usd is None
    )


def matrix_report(
    report: Mapping[str, Any],
    *,
    unpriced: Iterable[str] | None = None,
    points: float = DEFAULT_POINTS,
) -> dict[str, Any]:
    """``{"matrix": …, "frontier": …}`` for a report dict."""
    matrix = build_matrix(report, unpriced=unpriced)
    return {"matrix": matrix, "frontier": build_frontier(matrix, points=points)}


def matrix_of(report: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The stored matrix and frontier, or, for a report from before they existed, both
    computed from its per-contestant figures with the default points."""
    if report.get("matrix") and report.get("frontier"):
        return dict(report["matrix"]), dict(report["frontier"])
    built = matrix_report(report)
    return built["matrix"], built["frontier"]


# --- the matrix ------------------------------------------------------------------------------


def build_matrix(
    report: Mapping[str, Any], *, unpriced: Iterable[str] | None = None
) -> dict[str, Any]:
    contestants = [str(c) for c in report.get("contestants") or ()]
    cards = report.get("per_contestant") or {}
    scorecard: Any = report.get("scorecard")
    scored_cells: Any = scorecard.get("cells") if isinstance(scorecard, Mapping) else None
    from_scorecard = isinstance(scored_cells, Mapping)
    # a scorecard without criteria scores a cell by its pass rate: say so
    weighted = from_scorecard and bool(scorecard.get("criteria"))
    without_price = set(unpriced or ())
    cells = []
    for name in contestants:
        card = cards.get(name) or {}
        score = (
            _scorecard_score(scored_cells.get(name) or {})
            if from_scorecard
            else _pass_rate_score(card)
        )
        cells.append(_cell(name, card, score, _is_unpriced(name, card, without_price)))
    models = list(dict.fromkeys(cell["model"] for cell in cells))
    variants = list(dict.fromkeys(cell["variant"] for cell in cells))
    return {
        "score_from": "scorecard" if weighted else "pass_rate",
        "models": models,
        "variants": variants,
        "grid": len(models) > 1 and len(variants) > 1,
        "cells": cells,
    }


def _scorecard_score(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "score": row.get("score"),
        "passed": int(row.get("passed") or 0),
        "scored": int(row.get("scored") or 0),
        "errors": int(row.get("errors") or 0),
    }


def _pass_rate_score(card: Mapping[str, Any]) -> dict[str, Any]:
    """Passed every verdict, over the answers that were scored: an answer that errored, or
    whose grade had no usable score, is an error and not in the denominator."""
    pass_k = card.get("pass_k") or {}
    # every answer (a report from before pass_k counted them: its schema n, then every answer)
    answers = int(pass_k.get("answers", (card.get("schema") or {}).get("n")) or 0)
    failed = int(card.get("errors") or 0)
    grade_errors = int((card.get("grade") or {}).get("errors") or 0)
    passed = pass_k.get("answers_passed")
    scored = max(answers - failed - grade_errors, 0)
    return {
        "score": passed / scored if scored and passed is not None else None,
        "passed": passed,
        "scored": scored,
        "errors": failed + grade_errors,
    }


def _is_unpriced(name: str, card: Mapping[str, Any], unpriced: set[str]) -> bool:
    if name in unpriced:
        return True
    # scripted, command and given answers cost nothing because nothing priced them
    provider = split_contestant(name)[0].partition("/")[0]
    return provider in UNPRICED_PROVIDERS and not (card.get("cost") or {}).get("if_uncached_usd")


def _cell(
    name: str, card: Mapping[str, Any], score: dict[str, Any], unpriced: bool
) -> dict[str, Any]:
    model, variant = split_contestant(name)
    tokens, cost = card.get("tokens") or {}, card.get("cost") or {}
    uncached = None if unpriced else cost.get("if_uncached_usd")
    scored = score["scored"]
    return {
        "contestant": name,
        "model": model,
        "variant": variant,
        **score,
        "tokens": {"input": tokens.get("input"), "output": tokens.get("output")},
        "priced": not unpriced,
        "cost_usd": None if unpriced else cost.get("usd"),
        "cost_if_uncached_usd": uncached,
        "cost_per_scored_usd": uncached / scored if uncached is not None and scored else None,
        "latency_p50_ms": (card.get("latency") or {}).get("p50"),
    }


# --- the frontier ----------------------------------------------------------------------------


def build_frontier(matrix: Mapping[str, Any], *, points: float = DEFAULT_POINTS) -> dict[str, Any]:
    """The three facts over the matrix's cells; see the module docstring."""
    cells = list(matrix.get("cells") or ())
    scored = [c for c in cells if c.get("score") is not None]
    costed = [c for c in scored if c.get("cost_per_scored_usd") is not None]
    top = max((_score(c) for c in scored), default=None)
    # the floor rounded as the scores are: 0.54 - 0.05 is 0.49000000000000005 in floats
    floor = None if top is None else round(top - points / 100, _PLACES)
    within = [] if floor is None else [c for c in costed if _score(c) >= floor]
    cheapest = min((_cost(c) for c in within), default=None)
    return {
        "points": points,
        "cost": COST_BASIS,
        "highest_score": top,
        "highest": [c["contestant"] for c in scored if _score(c) == top],
        "cheapest_within": [c["contestant"] for c in within if _cost(c) == cheapest],
        "cheapest_within_cost_usd": cheapest,
        "not_beaten": [c["contestant"] for c in costed if not _beaten(c, costed)],
        "no_score": [c["contestant"] for c in cells if c.get("score") is None],
        "unpriced": [c["contestant"] for c in scored if c.get("cost_per_scored_usd") is None],
    }


def _score(cell: Mapping[str, Any]) -> float:
    return round(float(cell["score"]), _PLACES)


def _cost(cell: Mapping[str, Any]) -> float:
    return round(float(cell["cost_per_scored_usd"]), _PLACES)


def _beaten(cell: Mapping[str, Any], cells: list[Mapping[str, Any]]) -> bool:
    """Another cell scores at least as high and costs at most as much, one strictly."""
    score, cost = _score(cell), _cost(cell)
    return any(
        _score(o) >= score and _cost(o) <= cost and (_score(o) > score or _cost(o) < cost)
        for o in cells
        if o is not cell
    )
