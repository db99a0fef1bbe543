"""What `evalsite list` shows of a run: a plain row (its --json) and an aligned line.

The headline is the run's own (:attr:`~runs.models.Run.headline`): what the run measured
(:func:`~evalsite.core.report.measured.measured`, as the run page's card leads with it: the
win-rates when the calibration gate allows a headline, else UNCALIBRATED and why; for a run
without pairwise judging its scorecard, matrix, pass^k or score), or what state a run without
a report is in. The cost is the run's spend as recorded on it and the age how long ago it
started, as every page of the web shows them.
"""

from __future__ import annotations

from collections.abc import Iterable

from evalsite.core.report import numbers as num
from evalsite.core.report.summary import aligned
from evalsite.core.report.text import visible
from runs.models import Run

HEAD = ("id", "suite", "status", "age", "contestants", "cost", "headline")
START_HINT = "no runs yet: start one with `evalsite run examples/support-desk.yaml --fake`"


def run_row(run: Run) -> dict:
    """One run as `evalsite list --json` gives it."""
    report = run.report
    return {
        "id": run.id,
        "label": run.label,
        "suite": run.suite.name,
        "status": run.status,
        "detail": run.detail,
        "contestants": run.contestants,
        "created_at": run.created_at.isoformat(),
        "age": run.age,
        "headline_eligible": bool(report and report.get("headline_eligible") is True),
        "headline": run.headline,
        "cost_usd": f"{run.spent_usd:.6f}",
        "simulated": run.simulated,
        "partial": run.stored_options.partial,
        "no_look": run.no_look,
    }


def listing_lines(rows: Iterable[dict]) -> list[str]:
    """The rows as an aligned table, every cell from a run made one safe line."""
    table = [HEAD]
    for row in rows:
        status = row["status"] + (", partial" if row["partial"] else "")
        status += ", no-look" if row.get("no_look") else ""
        cost = num.money(float(row["cost_usd"]), digits=4)
        table.append(
            (
                visible(row["id"]) + (f" ({visible(row['label'], 24)})" if row["label"] else ""),
                visible(row["suite"]),
                status,
                row["age"],
                visible(", ".join(row["contestants"]), 64),
                cost + (" (simulated)" if row["simulated"] else ""),
                visible(row["headline"], 160),
            )
        )
    return aligned(table)
