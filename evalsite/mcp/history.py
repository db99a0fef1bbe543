"""The MCP tools about a suite's runs: `list_runs` (its history, newest first) and
`set_baseline` (pin the run the regression gate compares against), as `evalsite baseline
set` pins it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalsite.mcp import replies
from evalsite.mcp.tools import Refused, find_run, load, run_reply, run_url, suite_file
from runs.models import Run, Suite

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


def list_runs(suite: str | None = None, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """Up to `limit` runs newest first, as `evalsite list` lists them: of one suite (by
    name, or its file inside the suite root) or of every suite but the judge lab's; each
    with its status, contestants, win-rates or why it has none, and its cost."""
    if not 1 <= limit <= MAX_LIMIT:
        raise Refused("invalid_argument", f"limit must be from 1 to {MAX_LIMIT}, not {limit}")
    name = None if suite is None else suite_name(suite)
    chosen = None if name is None else Suite.objects.filter(name=name).first()
    runs = Run.objects.none() if name and not chosen else Run.objects.listing(suite=chosen)
    rows = [_row(run) for run in runs[: limit + 1]]
    return {
        "suite": name,
        "runs": rows[:limit],
        "more": len(rows) > limit,
        "note": "headline_eligible and calibration are each run's own: quote a win-rate only "
        "from a run whose headline_eligible is true",
    }


def suite_name(reference: str) -> str:
    """The name of the suite `reference` names: a registered suite's name, or a suite file
    inside the suite root (as `evalsite last` takes either)."""
    if Suite.objects.filter(name=reference.strip()).exists():
        return reference.strip()
    if Path(reference).suffix not in (".yaml", ".yml"):
        raise Refused(
            "no_such_suite",
            f"no suite is named {reference!r}; name a registered suite or a suite file",
        )
    return load(suite_file(reference)).name


def _row(run: Run) -> dict[str, Any]:
    facts = {
        "run_id": run.id,
        "created_at": run.created_at.isoformat(),
        "suite": run.suite.name,
        "label": run.label,
        "status": run.status,
        "contestants": list(run.contestants),
        "cost_usd": replies.usd(run.spent_usd),
        "cost_if_uncached_usd": replies.usd(run.uncached_usd),
        "simulated": run.simulated,
        "web_url_path": run_url(run.id),
    }
    detail = run.detail if run.status != Run.Status.DONE else ""
    return replies.run_row(facts, run.report, detail=detail)


def set_baseline(run_id: str) -> dict[str, Any]:
    """Pin the run as its suite's baseline (`evalsite baseline set`): the run must have a
    report. The reply is the run's summary with what was pinned before."""
    run = find_run(run_id, with_report=True)
    suite = run.suite
    previous = suite.baseline_run_id
    suite.pin_baseline(run)
    return run_reply(run) | {
        "baseline": {"suite": suite.name, "run_id": run.id, "previous_run_id": previous}
    }
