"""What the MCP tools send back, shaped from plain values (docs/mcp.md).

Contract: a reply is a summary and paths. It is built from named keys of the stored report
(never copied whole), so answer text, judge rationales and provider responses cannot reach
it; every reply carries ``headline_eligible`` and the calibration status; and
:func:`scrub` removes anything shaped like a key, or equal to a secret, before it is sent.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalsite.core.keys import REDACTED, redact

PAGE_SIZE = 25
MESSAGE_CHARS = 300
CALIBRATION_KEYS = ("status", "reason", "kappa", "kappa_band", "kappa_ci", "n")
WIN_RATE_KEYS = ("win_rate", "ci", "n", "flips", "flip_rate", "excluded")
TOTAL_KEYS = ("answers", "pairs", "judge_calls", "cost_usd", "cost_if_uncached_usd", "simulated")
REFUSAL_CODES = (
    "outside_suite_root",
    "invalid_suite",
    "invalid_argument",
    "max_cost_above_ceiling",
    "estimate_over_cap",
    "plan_error",
    "no_such_run",
    "no_report",
)
UNCALIBRATED_NOTE = (
    "headline_eligible is false: the judge's agreement with the team's labels is not shown "
    "({status}: {reason}). These win-rates are UNCALIBRATED and must not be quoted as results."
)


def refusal(reason: str, message: str, **extra: Any) -> dict[str, Any]:
    """A refusal: nothing was called and nothing was spent."""
    assert reason in REFUSAL_CODES, reason
    return {"refused": True, "reason": reason, "message": message, "spent_usd": 0} | extra


def report_reply(report: Mapping[str, Any], *, web_url_path: str) -> dict[str, Any]:
    """The summary of a run with a report (`run_suite`, `last_report`, `get_run`)."""
    eligible = bool(report.get("headline_eligible"))
    calibration = calibration_status(report)
    report_path = str(report.get("report_path") or "")
    totals = report.get("totals") or {}
    reply = {
        "run_id": report["run_id"],
        "status": report["status"],
        "suite": {"name": report["suite"]["name"], "hash": report["suite"]["hash"]},
        "contestants": list(report["contestants"]),
        "headline_eligible": eligible,
        "calibration": calibration,
        "win_rates": {
            candidate: {key: rate.get(key) for key in WIN_RATE_KEYS}
            | {"uncalibrated": not eligible}
            for candidate, rate in (report.get("win_rates") or {}).items()
        },
        "totals": {key: totals.get(key) for key in TOTAL_KEYS},
        "warnings": [str(warning) for warning in report.get("warnings") or ()],
        "report_path": report_path,
        "report_md": str(Path(report_path) / "report.md") if report_path else "",
        "web_url_path": web_url_path,
    }
    if not eligible:
        reply["note"] = UNCALIBRATED_NOTE.format(
            status=calibration["status"], reason=calibration["reason"] or "no reason given"
        )
    return reply


def calibration_status(report: Mapping[str, Any]) -> dict[str, Any]:
    calibration = report.get("calibration") or {}
    return {key: calibration.get(key) for key in CALIBRATION_KEYS}


def failures_page(
    failures: Sequence[Mapping[str, Any]], exclusions: Sequence[Mapping[str, Any]], page: int
) -> dict[str, Any]:
    """Page `page` (from 1) of both lists, 25 items of each a page; a page past the end is
    empty. Each item names where it happened and why, never what was answered."""
    pages = max(1, math.ceil(len(failures) / PAGE_SIZE), math.ceil(len(exclusions) / PAGE_SIZE))
    window = slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE)
    return {
        "page": page,
        "pages": pages,
        "page_size": PAGE_SIZE,
        "failures_total": len(failures),
        "exclusions_total": len(exclusions),
        "failures": [failure_item(item) for item in failures[window]],
        "exclusions": [exclusion_item(item) for item in exclusions[window]],
    }


def failure_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "task": item.get("task"),
        "case": item.get("case"),
        "repeat": item.get("repeat"),
        "contestant": item.get("contestant"),
        "kind": item.get("kind") or "error",
        "message": str(item.get("message") or "")[:MESSAGE_CHARS],
    }


def exclusion_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "task": item.get("task"),
        "case": item.get("case"),
        "repeat": item.get("repeat"),
        "contestant": item.get("candidate"),
        "baseline": item.get("baseline"),
        "kind": item.get("reason"),
    }


def scrub(value: Any, secrets: Iterable[str] = ()) -> Any:
    """`value` with every string passed through :func:`redact` and every secret replaced."""
    secrets = [secret for secret in secrets if len(secret) >= 8]
    return _scrub(value, secrets)


def _scrub(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return redact(value)
    if isinstance(value, Mapping):
        return {_scrub(key, secrets): _scrub(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(item, secrets) for item in value]
    return value
