"""A suite's runs side by side, for the "Across runs" card of its page: the points of its
latest finished runs (:func:`evalsite.core.report.across.run_points`, read from the few
top-level parts of each run's stored report it needs, fetched alone, once a process for a
done run) and the two charts of them, drawn by the core."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db.models.fields.json import KeyTransform

from evalsite.core.report.across import (
    RunPoint,
    cost_quality_svg,
    run_points,
    runs_over_time_svg,
    unplotted,
)
from runs.models import Run, Suite
from runs.results.memo import FinishedRunMemo

LATEST = 20  # runs: more points than this make the charts unreadable
# what run_points reads of a report (its matrix, or what the matrix is built from): a
# report's per-case parts are never read for the card
REPORT_KEYS = ("contestants", "per_contestant", "scorecard", "matrix", "frontier", "win_rates",
               "headline_eligible", "totals")  # fmt: skip


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
    runs = list(newest.only("id", "label", "created_at", "status", "finished_at")[:latest])
    if not runs:
        return None
    points = [
        point
        for run in reversed(runs)
        for point in run_points(
            run.label or run.id,
            f"{run.created_at:%Y-%m-%d %H:%M}",
            _PARTS.get(run, partial(_report_parts, run.pk)),
        )
    ]
    return AcrossRuns(
        points, runs_over_time_svg(points), cost_quality_svg(points), unplotted(points)
    )


# A done run's parts, read once a process: SQLite reads a key of a JSON column by parsing
# the whole of it, and a 100,000-pair run's report is megabytes (194 ms for one run's keys).
_PARTS: FinishedRunMemo[dict[str, Any]] = FinishedRunMemo(size=4 * LATEST)


def _report_parts(pk: str) -> dict[str, Any]:
    """The parts of the run's stored report that :func:`run_points` reads, fetched alone."""
    keys = {f"report_{key}": KeyTransform(key, "report") for key in REPORT_KEYS}
    return _report(Run.objects.filter(pk=pk).values(**keys).get())


def _report(row: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a run's report a row holds; SQLite gives a JSON true as 1."""
    report = {key: row[f"report_{key}"] for key in REPORT_KEYS}
    report["headline_eligible"] = report["headline_eligible"] in (True, 1)
    return {key: value for key, value in report.items() if value is not None}
