"""Validating a suite against the format and the active price table (`evalsite validate`, pages)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from evalsite.core import judge_warnings
from evalsite.core.gate_subjects import unknown_subject_problems
from evalsite.core.pricing import priced_as_notes, unknown_model_message
from evalsite.core.suite_params import parameter_notes
from evalsite.core.suites import Suite, SuiteError, load_suite
from runs.engine.sandbox import one_sandbox_probe, probe_soon
from runs.models import Endpoint, NoActivePriceTable, PriceTable
from runs.planning.planner import (
    PlanError,
    execution_checked,
    keys_line,
    needed_keys,
    sandbox_problem,
)
from runs.planning.start import file_problems, plan_problems
from runs.setup import prepare_database

# Web threads that may validate a member's suite at once. A validation is bounded (the
# rendering bounds of evalsite.core.jinja_budget) but CPU-bound: with `evalsite serve`'s
# 8 threads, the others stay free for every other page.
MAX_MEMBER_VALIDATIONS = 2
MEMBER_VALIDATIONS = threading.BoundedSemaphore(MAX_MEMBER_VALIDATIONS)
BUSY = (
    "The server is checking other suites right now; nothing was checked or registered. "
    "Try again in a moment."
)


@contextmanager
def member_validation() -> Iterator[bool]:
    """Whether this thread may validate a member's suite now (it holds a slot until the
    block ends); never waits, so a busy server answers at once instead of queueing."""
    free = MEMBER_VALIDATIONS.acquire(blocking=False)
    try:
        yield free
    finally:
        if free:
            MEMBER_VALIDATIONS.release()


def model_errors(loaded: Suite) -> tuple[list[str], dict]:
    """Resolve every model string of the suite; return (errors, details for the summary)."""
    try:
        table = PriceTable.objects.current()
    except NoActivePriceTable as exc:
        return [str(exc)], {}
    models = loaded.model_strings()
    resolution = table.resolve(models)
    errors = [
        unknown_model_message(model, hint, table.name) for model, hint in resolution.unknown.items()
    ]
    details = {
        "price_table": table.name,
        "models": {
            "priced": list(resolution.priced),
            "priced_as": dict(resolution.aliases),
            "not_priced": list(resolution.not_priced),
            "unknown": sorted(resolution.unknown),
        },
    }
    return errors, details


def judge_lines(
    contestants: list[str], judge_model: str | None, max_tokens: int | None
) -> list[str]:
    """The judge warnings for the contestants and judge a run will really have (``--models``
    and ``--judge`` may differ from the suite's, which `validate` checks): printed at a
    run's start."""
    if not judge_model:
        return []
    lines = (
        judge_warnings.judge_is_contestant_warning(judge_model, contestants),
        judge_warnings.self_preference_warning(judge_model, contestants),
        judge_warnings.budget_warning(max_tokens),
    )
    return [line for line in lines if line]


def not_sent_outcome(notes) -> dict:
    """The parameters each contestant will not be sent: the lines `validate` prints, and
    by contestant and parameter the reason (its --json)."""
    not_sent: dict[str, dict[str, str]] = {}
    for note in notes:
        not_sent.setdefault(note.contestant, {})[note.param] = note.reason
    return {"notes": [str(note) for note in notes], "not_sent": not_sent}


def summary_line(path: str, loaded: Suite, table_name: str) -> str:
    sourced = [task.id for task in loaded.tasks if task.cases_from]
    later = f" (and the cases of {', '.join(sourced)}, read at run time)" if sourced else ""
    no_look = "; no-look: no case data will be written" if loaded.no_look else ""
    return (
        f"ok: {path} - {len(loaded.tasks)} tasks, {loaded.case_count()} cases{later}, "
        f"{len(loaded.labels)} labels; every prompt rendered; {len(loaded.model_strings())} "
        f"model strings resolved against {table_name}{no_look}"
    )


def validate(path: str) -> dict:
    """Everything `evalsite validate` reports, as plain data (also its --json output)."""
    with one_sandbox_probe():  # asked for the warning, then again by the dry-run plan
        return _validate(path)


def _validate(path: str) -> dict:
    outcome: dict = {"ok": False, "path": path, "errors": [], "warnings": [], "notes": []}
    try:
        loaded = load_suite(path)
    except SuiteError as exc:
        outcome["errors"] = [str(problem) for problem in exc.problems]
        return outcome
    outcome["warnings"] = [str(problem) for problem in loaded.warnings]
    if execution_checked(loaded):
        probe_soon()  # beside the checks below; the plan's ask and the warning's wait for it
    _check(path, loaded, outcome)
    outcome["warnings"] += filter(None, [sandbox_problem(loaded)])
    return outcome


def _check(path: str, loaded: Suite, outcome: dict) -> None:
    """Into `outcome`: the parameters each contestant is not sent, the models against the
    price table, the files, the plan of the suite's own run and the keys it needs."""
    outcome.update(not_sent_outcome(parameter_notes(loaded, loaded.models, loaded.judge_model)))
    prepare_database()
    errors, details = model_errors(loaded)
    errors += unknown_subject_problems(loaded.gate, loaded.models)  # as a run of its models
    outcome.update(details)
    outcome["notes"] += priced_as_notes(details.get("models", {}).get("priced_as", {}))
    outcome["errors"] = [f"{path}: {error}" for error in errors]
    outcome["errors"] += file_problems(path, loaded, no_look=loaded.no_look)
    errors = outcome["errors"]
    if errors:
        return
    outcome["errors"] = errors = [f"{path}: {error}" for error in plan_problems(loaded)]
    if errors:
        return
    try:
        keys = needed_keys(loaded.model_strings(), Endpoint.objects.configs())
    except PlanError as error:
        outcome["errors"] = [f"{path}: {error}"]
        return
    outcome.update(
        keys={
            name: {"models": models, "set": bool(os.environ.get(name, "").strip())}
            for name, models in keys.items()
        },  # fmt: skip
        keys_line=keys_line(keys, os.environ),
        ok=True,
        suite=loaded.name,
        sha256=loaded.sha256,
        tasks=len(loaded.tasks),
        cases=loaded.case_count(),
        labels=len(loaded.labels),
        summary=summary_line(path, loaded, details["price_table"]),
    )
