"""A run's summary: what `evalsite run --json`, `report --json` and `last --json` print and
what the MCP tools `run_suite`, `get_run`, `last_report` and `set_baseline` return.

One builder for every face (issue 28): a run with a report is summarised by its report.json
itself — win-rates, calibration, the matrix, the scorecard, pass^k, per-tag rates, the gate
verdicts (`gates`, `gates_passed`) and the totals — so no face can leave a figure out; a run
without one (refused, failed before its report) by what is known of it.
"""

from __future__ import annotations

from typing import Any

from runs.models import Run
from runs.results.progress import answer_totals


def run_summary(run: Run) -> dict[str, Any]:
    """The run's report.json, or for a run with no report its status, plan and totals (no
    gate was checked: it has no `gates`)."""
    if run.report is not None:
        return run.report
    return {
        "run_id": run.id,
        "status": run.status,
        "detail": run.detail,
        "suite": {"name": run.suite_version.suite.name, "hash": run.suite_version.sha256},
        "contestants": run.contestants,
        "judge": run.judge.get("model"),
        "price_table": run.price_table.name,
        "headline_eligible": False,
        "calibration": {"status": "none"},
        "cap_usd": f"{run.cap_usd:.6f}",
        "estimate": run.estimate,
        "report_path": str(run.report_dir),
        "totals": answer_totals(run),
    }
