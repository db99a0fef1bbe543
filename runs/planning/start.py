"""One way to start a run from a suite file: `evalsite run`, MCP's run_suite and
`evalsite validate` (its checks) all go through here, so every refusal made before
anything is spent is made by each of them alike.

:func:`file_problems` is what a loaded suite file is refused for before anything is read
or registered (its datasources, no-look execution checks, `python:` check modules);
:func:`plan_file` adds reading the datasources, registering the version and planning.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from evalsite.core.datasource import SourceError, source_problems, with_source_cases
from evalsite.core.exitcodes import ExitCode
from evalsite.core.suites import Suite
from runs.engine.scoring import python_check_problems
from runs.models import SuiteVersion
from runs.planning.planner import (
    Plan,
    PlanError,
    PlanRest,
    RunOptions,
    make_plan,
    no_look_problem,
    start_plan,
    store_plan,
)

# The planning room's face for the rest of the house (tests/core/test_rooms.py): a run is
# planned from a file here, or by make_plan from given answers (the judge lab), and stored by
# start_plan to execute here (its first answers, then the rest beside its first calls) or by
# store_plan whole, or launched by runs.planning.launch to the workers.
__all__ = [
    "Plan",
    "PlanError",
    "PlanRest",
    "Refused",
    "RunOptions",
    "file_problems",
    "make_plan",
    "plan_file",
    "plan_problems",
    "start_plan",
    "store_plan",
]


class Refused(Exception):
    """A suite file or run refused before anything was spent: every problem, each on its
    own line; `reason` says which step refused it (``invalid_suite`` or ``plan_error``)."""

    def __init__(
        self,
        problems: list[str],
        *,
        reason: str = "invalid_suite",
        code: ExitCode = ExitCode.INPUT_ERROR,
    ):
        super().__init__("; ".join(problems))
        self.problems = problems
        self.reason = reason
        self.code = code


def file_problems(path: str | Path, loaded: Suite, *, no_look: bool) -> list[str]:
    """Every reason to refuse the loaded suite file at `path` before anything is read,
    registered or spent: datasources that cannot be used, execution checks in a no-look
    run, `python:` checks whose module or function is not there (looked for beside the
    file, where scoring looks first). Each names the file."""
    folder = Path(path).resolve().parent
    problems = source_problems(loaded, folder)
    if no_look:
        problems += [problem for problem in [no_look_problem(loaded)] if problem]
    problems += python_check_problems(loaded, [str(folder)])
    return [f"{path}: {problem}" for problem in problems]


def plan_problems(loaded: Suite) -> list[str]:
    """What planning the suite's own run refuses (its models and judge, no option given):
    scripted replies, parameters, media, contestants. A dry run, so no key is needed and
    nothing is stored or read from a datasource; a suite whose cases come from one is
    planned at run time (its cases are not read here). A suite that names no replies file
    gets one at run time (`--replies`), as a key: its scripted models are not held to one;
    a suite that names no models gets them at run time (`--models`), so it is not planned."""
    if not loaded.models or any(task.cases_from for task in loaded.tasks):
        return []
    try:
        make_plan(None, loaded, RunOptions(dry_run=True, fake=not loaded.replies_path))
    except PlanError as error:
        return [str(error)]
    return []


def plan_file(
    path: str | Path,
    loaded: Suite,
    options: RunOptions,
    *,
    origin: str = SuiteVersion.Origin.PATH,
) -> Plan:
    """The plan of a run of the suite file at `path` (`loaded` from it): checked, its
    datasources read, its version registered (origin `origin`), planned with a copy of
    `options` (the caller's are left as they were). Not stored: the caller stores it (after
    a dry run's estimate, or under its signal handling).
    Raises :class:`Refused` with every problem before anything is spent."""
    no_look = options.no_look or loaded.no_look
    problems = file_problems(path, loaded, no_look=no_look)
    if problems:
        raise Refused(problems)
    try:
        full = with_source_cases(loaded, Path(path).resolve().parent, quote=not no_look)
    except SourceError as error:
        raise Refused([str(problem) for problem in error.problems]) from None
    version, _ = SuiteVersion.objects.register_file(path, full, origin=origin, no_look=no_look)
    options = dataclasses.replace(options, no_look=no_look, datasource=full is not loaded)
    try:
        return make_plan(version, full, options)
    except PlanError as error:
        raise Refused([str(error)], reason="plan_error", code=error.code) from None
