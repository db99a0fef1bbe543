"""The MCP tools' work where it meets the ORM: the same steps as `evalsite run`, `last`,
`compare` and `report`, each refusing with a :class:`Refused` before anything is spent.

Every function here is synchronous; the server calls them on worker threads.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Count, Q
from django.urls import reverse

from evalsite.core.keys import held_secrets
from evalsite.core.money import MoneyError, parse_cap
from evalsite.core.report.compare import REGRESSION_POINTS, compare_reports
from evalsite.core.suites import Suite as LoadedSuite
from evalsite.core.suites import SuiteError, load_suite
from evalsite.mcp import replies
from runs.models import Answer, Call, Endpoint, Judgement, Pair, Run, Suite, SuiteVersion
from runs.planning.start import PlanRest, RunOptions, plan_file, start_plan
from runs.planning.start import Refused as PlanRefused
from runs.results.calibration import suite_calibration
from runs.results.progress import progress
from runs.results.summary import run_summary

SHOWN_PROBLEMS = 5


class Refused(Exception):
    """A tool call refused before any provider call; `reply` is its refusal object."""

    def __init__(self, reason: str, message: str, **extra: Any):
        super().__init__(message)
        self.reply = replies.refusal(reason, message, **extra)


# --- run_suite -------------------------------------------------------------------------------


def start_run(
    suite_path: str,
    models: list[str],
    max_cost: Any = None,
    no_cache: bool = False,
    fake: bool = False,
) -> tuple[Run, PlanRest | None]:
    """Register the suite (origin "mcp"), plan and store a run ready to execute here, as
    `evalsite run` does (start_plan): the run, and the rest of its plan for its shard.

    Refused: a path outside the suite root, a cap above the ceiling, an invalid suite (a
    python check that cannot be imported from the suite's folder too), a plan the planner
    refuses, an estimate over the cap (that run is stored as refused, as
    `evalsite run` stores it, so it shows in the web app)."""
    path = suite_file(suite_path)
    requested = requested_cap(max_cost)
    loaded = load(path)
    options = RunOptions(
        models=[model.strip() for model in models if model.strip()] or None,
        fake=fake,
        max_cost=requested or default_cap(loaded),
        no_cache=no_cache,
    )
    try:
        plan = plan_file(path, loaded, options, origin=SuiteVersion.Origin.MCP)
    except PlanRefused as refused:
        raise Refused(refused.reason, _shown(refused.problems)) from None
    run, rest = start_plan(plan)
    if run.status == Run.Status.REFUSED:
        raise Refused(
            "estimate_over_cap",
            run.detail,
            run_id=run.id,
            estimate_usd=str(plan.estimate["total_usd"]),
            cap_usd=f"{plan.cap:f}",
            web_url_path=run_url(run.id),
        )
    return run, rest


def suite_file(suite_path: str) -> Path:
    """The suite file `suite_path` names (relative paths from the suite root), resolved
    after symlinks; Refused unless it is a file inside EVALSITE_MCP_SUITE_ROOT."""
    root = Path(settings.EVALSITE_MCP_SUITE_ROOT).resolve()
    try:
        target = (root / suite_path).resolve()
    except (OSError, ValueError, RuntimeError):
        raise Refused("invalid_suite", f"{suite_path!r} is not a usable path") from None
    if not target.is_relative_to(root):
        raise Refused(
            "outside_suite_root",
            f"suite_path must name a file inside the MCP suite root {root} (after following "
            f"symlinks); {suite_path!r} is outside it",
        )
    try:
        target = target.resolve(strict=True)
    except (OSError, RuntimeError):
        raise Refused("invalid_suite", f"no suite file {suite_path!r} in {root}") from None
    if not target.is_file():
        raise Refused("invalid_suite", f"{suite_path!r} is not a file")
    return target


def requested_cap(max_cost: Any) -> Decimal | None:
    """The agent's own cap, as the client sent it: a positive number of USD no higher than
    the ceiling (refused, not clamped, above it); a boolean or anything but a number or its
    text is refused."""
    if max_cost is None:
        return None
    try:
        cap = parse_cap(max_cost, what="max_cost")
    except MoneyError as error:
        raise Refused("invalid_argument", str(error)) from None
    ceiling = settings.EVALSITE_MCP_MAX_COST_CEILING
    if cap > ceiling:
        raise Refused(
            "max_cost_above_ceiling",
            f"max_cost ${cap:f} is above the MCP ceiling ${ceiling:f} "
            "(EVALSITE_MCP_MAX_COST_CEILING); it is refused, not lowered",
            ceiling_usd=f"{ceiling:f}",
        )
    return cap


def default_cap(loaded: LoadedSuite) -> Decimal:
    """Without max_cost: the suite's limit, EVALSITE_MCP_MAX_COST and the ceiling, whichever
    is lowest."""
    caps = [settings.EVALSITE_MCP_MAX_COST, settings.EVALSITE_MCP_MAX_COST_CEILING]
    if loaded.cap_usd is not None:
        caps.append(loaded.cap_usd)
    return min(caps)


def load(path: Path) -> LoadedSuite:
    try:
        return load_suite(path)
    except SuiteError as error:
        raise Refused("invalid_suite", _shown(error.problems)) from None


def _shown(problems: Sequence[object]) -> str:
    """The first few problems on one line, and how many more there are."""
    shown = [str(problem) for problem in problems[:SHOWN_PROBLEMS]]
    more = len(problems) - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def run_progress(run_id: str) -> tuple[int, int, str]:
    """(calls finished, calls planned so far, a line) over answers and judge calls together,
    so the number only grows as the run moves from answering to judging."""
    run = Run.objects.get(pk=run_id)
    snap = progress(run)
    finished = total = 0
    for calls in (Answer, Judgement):
        counts = calls.objects.filter(run_id=run_id).aggregate(
            total=Count("pk"), finished=Count("pk", filter=Q(status__in=Call.FINISHED))
        )
        finished += counts["finished"]
        total += counts["total"]
    line = (
        f"{snap.status}: {snap.phase} {snap.finished}/{snap.total}, {snap.errors} errors, "
        f"${snap.spent_usd:.4f} of ${snap.cap_usd:.2f}"
    )
    return finished, total, line


def cancel(run_id: str) -> None:
    Run.objects.get(pk=run_id).request_cancel()


# --- replies ---------------------------------------------------------------------------------


def run_reply(run: Run | str) -> dict[str, Any]:
    """The run's summary as `evalsite report RUN --json` prints it (:func:`run_summary`: its
    report.json, gate verdicts included), with where to read it and the suite's calibration."""
    if not isinstance(run, Run):
        run = Run.objects.select_related("suite_version__suite").get(pk=run)
    summary = run_summary(run)
    report_path = str(summary.get("report_path") or "") if run.report is not None else ""
    reply = summary | {
        "report_md": str(Path(report_path) / "report.md") if report_path else "",
        "web_url_path": run_url(run.id),
        "suite_calibration": suite_calibration_status(run.suite),
    }
    if run.report is None:
        return reply | {"note": "this run has no report, so it has no win-rates and no gates"}
    if not summary.get("headline_eligible"):
        calibration = replies.calibration_status(summary)
        reply["note"] = replies.UNCALIBRATED_NOTE.format(
            status=calibration["status"], reason=calibration["reason"] or "no reason given"
        )
    return reply


def suite_calibration_status(suite: Suite) -> dict[str, Any]:
    """The suite's calibration as the web app shows it: its calibration run's gate, live
    with every label, and whether that kappa is stale (the suite's judge changed)."""
    calibration = suite_calibration(suite, brief=True)
    if calibration is None:
        return {"status": "none", "run_id": None, "stale": False}
    keys = (
        "status",
        "reason",
        "kappa",
        "kappa_band",
        "n",
        "labels_for_half_width",
        "half_width",
        "run_id",
        "stale",
        "judge_config",
    )
    return {key: calibration.get(key) for key in keys}


def last_report(suite_path: str) -> dict[str, Any]:
    """The summary of the latest run with a report of the suite at `suite_path`."""
    loaded = load(suite_file(suite_path))
    suite = Suite.objects.filter(name=loaded.name).first()
    run = (
        Run.objects.for_suite(suite).filter(report__isnull=False).order_by("-created_at").first()
        if suite
        else None
    )
    if run is None:
        raise Refused("no_such_run", f"suite {loaded.name!r} has no finished run with a report")
    return run_reply(run)


def compare_runs(run_a: str, run_b: str, points: float = REGRESSION_POINTS) -> dict[str, Any]:
    """`evalsite compare A B --fail-on-regression POINTS --json`, with each run's
    calibration beside it."""
    a, b = find_run(run_a, with_report=True), find_run(run_b, with_report=True)
    compared = compare_reports(a.stored_report, b.stored_report)
    checked = compared.regressions(points)
    comparison = compared.to_dict() | {
        "regression_points": points,
        "regressions": [regression.to_dict() for regression in checked],
        "regressed": any(regression.regressed for regression in checked),
    }
    sides: dict[str, dict[str, Any]] = {
        side: {
            "run_id": run.id,
            "headline_eligible": bool(run.stored_report.get("headline_eligible")),
            "calibration": replies.calibration_status(run.stored_report),
        }
        for side, run in (("a", a), ("b", b))
    }
    statuses = {side["calibration"]["status"] for side in sides.values()}
    eligible = all(side["headline_eligible"] for side in sides.values())
    reply = comparison | {
        "headline_eligible": eligible,
        "calibration": {"status": statuses.pop() if len(statuses) == 1 else "mixed"} | sides,
        "web_url_path": reverse("compare") + "?" + urlencode({"a": a.id, "b": b.id}),
    }
    if not eligible:
        reply["note"] = (
            "a run compared is not headline eligible: its win-rates are UNCALIBRATED, so the "
            "win-rate changes must not be quoted as results"
        )
    return reply


def run_detail(run_id: str, detail: str, page: int) -> dict[str, Any]:
    run = find_run(run_id)
    if detail == "summary":
        return run_reply(run)
    head = {
        "run_id": run.id,
        "status": run.status,
        "headline_eligible": bool(run.report and run.report.get("headline_eligible")),
        "calibration": replies.calibration_status(run.report) if run.report else {"status": "none"},
    }
    if run.report is not None:
        failures, exclusions = run.report["failures"], run.report["exclusions"]
    else:
        failures, exclusions = _failures_from_rows(run)
    return head | replies.failures_page(failures, exclusions, page)


def _failures_from_rows(run: Run) -> tuple[list[dict], list[dict]]:
    """A run without a report: its failed answers and excluded pairs from the rows."""
    answers = (
        Answer.objects.filter(run=run, status=Call.Status.ERROR)
        .order_by("task_id", "case_id", "contestant", "repeat")
        .values("task_id", "case_id", "repeat", "contestant", "error_kind", "error_message")
    )
    pairs = (
        Pair.objects.filter(run=run)
        .exclude(excluded_reason="")
        .order_by("task_id", "case_id", "repeat")
        .values(
            "task_id",
            "case_id",
            "repeat",
            "candidate_contestant",
            "baseline_contestant",
            "excluded_reason",
        )
    )
    failures = [
        {
            "task": row["task_id"],
            "case": row["case_id"],
            "repeat": row["repeat"],
            "contestant": row["contestant"],
            "kind": row["error_kind"],
            "message": row["error_message"],
        }
        for row in answers
    ]
    exclusions = [
        {
            "task": row["task_id"],
            "case": row["case_id"],
            "repeat": row["repeat"],
            "candidate": row["candidate_contestant"],
            "baseline": row["baseline_contestant"],
            "reason": row["excluded_reason"],
        }
        for row in pairs
    ]
    return failures, exclusions


def find_run(reference: str, *, with_report: bool = False) -> Run:
    """The run `reference` names (id, unique prefix, label, ``latest`` or ``baseline``), as
    the CLI finds it."""
    try:
        return Run.objects.resolve(reference, with_report=with_report)
    except Run.DoesNotExist as error:
        raise Refused("no_such_run", str(error)) from None
    except Run.NoReport as error:
        raise Refused("no_report", str(error), run_id=error.run.id) from None


def run_url(run_id: str) -> str:
    return reverse("run_detail", args=[run_id])


def secrets_in_environment() -> list[str]:
    """The values of this process's key-like variables, never to appear in a reply."""
    return held_secrets(os.environ, Endpoint.objects.values_list("key_env_var", flat=True))
