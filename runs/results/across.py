"""A suite's runs side by side, for the "Across runs" card of its page: the points of its
latest finished runs (:func:`evalsite.core.report.across.run_points`, read from each run's
stored report) and the two charts of them, drawn by the core."""

from __future__ import annotations

from dataclasses import dataclass

from evalsite.core.report.across import (
    RunPoint,
    cost_quality_svg,
    run_points,
    runs_over_time_svg,
    unplotted,
)
from runs.models import Run, Suite

LATEST = 20  # runs: more points than this make the charts unreadable


@dataclass(frozen=True)
class AcrossRuns:
    """What the card shows: the points (its table), the charts and what they leave out."""

    points: list[RunPoint]
    over_time_svg: str
    cost_quality_svg: str
    notes: list[str]


def across_runs(suite: Suite, latest: int = LATEST) -> AcrossRuns | None:
    """The suite's latest ``latest`` runs with a report, oldest first; None without any."""
    newest = Run.objects.for_suite(suite).filter(report__isnull=False).order_by("-created_at")
    runs = list(newest.only("id", "label", "created_at", "report")[:latest])
    if not runs:
        return None
    points = [
        point
        for run in reversed(runs)
        for point in run_points(
            run.label or run.id, f"{run.created_at:%Y-%m-%d %H:%M}", run.report or {}
        )
    ]
    return AcrossRuns(
        points, runs_over_time_svg(points), cost_quality_svg(points), unplotted(points)
    )
