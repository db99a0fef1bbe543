"""`evalsite mcp`: the tools on the official MCP SDK, over stdio (docs/mcp.md).

Every tool answers with a ``CallToolResult`` whose ``structuredContent`` is the reply object
and whose text is the same object as JSON. A refusal is a result with ``isError: true`` and
``{"refused": true, "reason", "message", "spent_usd": 0}``: nothing was called. The ORM work
runs on worker threads; a run executes on its own thread, as under `evalsite run`, while the
tool call sends progress notifications.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
from django.db import close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, PlainValidator

from evalsite.core.report.compare import REGRESSION_POINTS
from evalsite.mcp import cases, history, replies, tools
from runs.engine.local import Stop, execute_here
from runs.models import Run
from runs.planning.start import PlanRest
from runs.setup import prepare_database

logger = logging.getLogger(__name__)
POLL_S = 0.5
INSTRUCTIONS = (
    "evalsite runs a team's evaluation suites (YAML files under the server's suite root) with "
    "two or more models, judges the answers pairwise and reports win-rates, pass rates and "
    "cost. Quote a win-rate as a result only when the reply's headline_eligible is true; "
    "otherwise the judge is not calibrated against the team's labels. Replies are summaries "
    "and file paths; answers are read in the web app or the report files."
)

SuitePath = Annotated[
    str,
    Field(description="The suite's YAML file, inside the server's suite root (or relative to it)."),
]
RunReference = Annotated[
    str, Field(description="A run id, a unique id prefix, a run label, or 'latest'.")
]
Contestant = Annotated[
    str, Field(description="provider/model[@variant], e.g. openai/gpt-4o-mini@concise.")
]
CaseReference = Annotated[
    str, Field(description="The case: task/case, or a case id that only one task has.")
]


def _as_sent(value: Any) -> Any:
    return value


async def run_suite(
    suite_path: SuitePath,
    ctx: Context,
    models: Annotated[
        list[str] | None,
        Field(
            description="Contestants, baseline first (provider/model[@variant]); "
            "empty or omitted: the suite's `models:`."
        ),
    ] = None,
    max_cost: Annotated[
        float | None,
        # Handed on as the client sent it: the cap rule (money.parse_cap) refuses a boolean,
        # which the argument model would have turned into $1.
        PlainValidator(_as_sent, json_schema_input_type=float | None),
        Field(
            description="Cap in USD; refused above the server's ceiling. Omitted: the "
            "lowest of the suite's limit and the server's default cap."
        ),
    ] = None,
    no_cache: Annotated[bool, Field(description="Skip cache reads (still writes).")] = False,
    fake: Annotated[
        bool, Field(description="Answer with the offline fake provider (simulated costs).")
    ] = False,
) -> CallToolResult:
    """Run a suite: answer every case with each contestant, check, judge and price it, and
    return the summary (calibration, win-rates, cost, report path). Refused, spending
    nothing, when the suite is outside the suite root or invalid, a model is unknown, or the
    estimate is over the cap. Sends progress notifications while it runs."""
    started = await anyio.to_thread.run_sync(
        lambda: _answer(tools.start_run, suite_path, models or [], max_cost, no_cache, fake)
    )
    if isinstance(started, CallToolResult):
        return started
    run, rest = started
    await _execute(run.id, ctx, rest)
    return await anyio.to_thread.run_sync(_answer, tools.run_reply, run.id)


def last_report(suite_path: SuitePath) -> CallToolResult:
    """The summary of the suite's latest run with a report."""
    return _answer(tools.last_report, suite_path)


def compare(
    run_a: RunReference,
    run_b: RunReference,
    regression_points: Annotated[
        float,
        Field(
            ge=0,
            le=100,
            strict=True,
            description="The regression threshold of `compare --fail-on-regression`: a rate "
            "or score down more than this many points (0-100), or a cost per answer if "
            "uncached up more than this percent, is a regression.",
        ),
    ] = REGRESSION_POINTS,
) -> CallToolResult:
    """What moved from run A to run B of a suite: win-rates, movers by task, schema and
    check pass rates, cost if uncached and spend, and every regression (the rule of
    `compare --fail-on-regression` and the regression gate); with each run's calibration."""
    return _answer(tools.compare_runs, run_a, run_b, regression_points)


def get_run(
    run_id: RunReference,
    detail: Annotated[
        Literal["summary", "failures"],
        Field(
            description="summary: the run's summary; failures: its failed calls and "
            "excluded pairs, 25 of each a page."
        ),
    ] = "summary",
    page: Annotated[int, Field(ge=1, description="The failures page, from 1.")] = 1,
) -> CallToolResult:
    """A run's summary, or a page of its failures and exclusions (where and why, never the
    answers)."""
    return _answer(tools.run_detail, run_id, detail, page)


def render_prompt(
    suite_path: SuitePath, contestant: Contestant, case: CaseReference
) -> CallToolResult:
    """The exact request the contestant would be sent for the case: system prompt,
    messages and params as its provider prepares them, the schema, and whether the cache
    holds its answer. No call is made and nothing is stored or spent."""
    return _answer(cases.render_prompt, suite_path, contestant, case)


def get_case_result(
    run_id: RunReference, contestant: Contestant, case: CaseReference
) -> CallToolResult:
    """One case of a run for one contestant: each repeat's verdicts (schema, checks,
    execution, grade, error, cost) and its pairs' verdicts, with the files and web pages
    to read the answers in (never the answer text itself)."""
    return _answer(cases.case_result, run_id, contestant, case)


def list_runs(
    suite: Annotated[
        str | None,
        Field(description="A suite name, or its YAML file in the suite root; omitted: all."),
    ] = None,
    limit: Annotated[int, Field(ge=1, le=history.MAX_LIMIT, description="Runs to list.")] = (
        history.DEFAULT_LIMIT
    ),
) -> CallToolResult:
    """Runs newest first: status, contestants, win-rates (or why there are none),
    calibration and cost of each."""
    return _answer(history.list_runs, suite, limit)


def set_baseline(run_id: RunReference) -> CallToolResult:
    """Pin a run with a report as its suite's baseline: the run the suite's regression gate
    (max_regression_points) and `baseline` references compare against. Replaces the suite's
    previous pin, which the reply names."""
    return _answer(history.set_baseline, run_id)


READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
TOOLS: tuple[tuple[Callable[..., Any], ToolAnnotations], ...] = (
    (
        run_suite,
        ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
    ),
    (last_report, READ_ONLY),
    (compare, READ_ONLY),
    (get_run, READ_ONLY),
    (render_prompt, READ_ONLY),
    (get_case_result, READ_ONLY),
    (list_runs, READ_ONLY),
    (
        set_baseline,
        ToolAnnotations(
            read_only_hint=False,
            destructive_hint=True,  # it replaces the suite's previous pin
            idempotent_hint=True,
            open_world_hint=False,
        ),
    ),
)


def _answer(work: Callable[..., Any], *args: Any) -> Any:
    """`work(*args)` on this worker thread: a reply dict becomes a result, a refusal an error
    result, and anything else (a planned run) is returned as it is."""
    try:
        done = work(*args)
        return _result(done) if isinstance(done, dict) else done
    except tools.Refused as refused:
        return _result(refused.reply, error=True)
    except Exception as error:
        logger.exception("the MCP tool %s failed", getattr(work, "__name__", work))
        failure = {"error": "internal_error", "message": f"{type(error).__name__}: see the log"}
        return _result(failure, error=True)
    finally:
        close_old_connections()  # as at the end of a web request


def _on_thread(work: Callable[..., Any], *args: Any) -> Any:
    try:
        return work(*args)
    finally:
        close_old_connections()


def _result(reply: dict[str, Any], *, error: bool = False) -> CallToolResult:
    reply = replies.scrub(reply, tools.secrets_in_environment())
    text = json.dumps(reply, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=reply, is_error=error
    )


async def _execute(run_id: str, ctx: Context, rest: PlanRest | None) -> None:
    """Execute the run here (execute_here, on a worker thread, its shard storing the `rest`
    of its plan), reporting progress every POLL_S until it ends. A cancelled tool call asks
    the run to stop between calls, as Ctrl-C does: the call returns at once, and the run's
    thread writes the cancel."""
    stop = Stop()
    sent = -1

    def on_progress(run: Run) -> None:
        nonlocal sent
        sent = anyio.from_thread.run(_report_progress, ctx, run.id, sent)

    def work() -> None:
        try:
            execute_here(Run.objects.get(pk=run_id), on_progress=on_progress, stop=stop,
                         poll_s=POLL_S, rest=rest)  # fmt: skip
        finally:
            close_old_connections()

    try:
        await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        stop.ask()
        raise
    await _report_progress(ctx, run_id, sent)


async def _report_progress(ctx: Context, run_id: str, sent: int) -> int:
    """Send the progress when it grew (MCP requires it to increase); return what was sent."""
    finished, total, line = await anyio.to_thread.run_sync(_on_thread, tools.run_progress, run_id)
    if finished > sent:
        await ctx.report_progress(finished, total or None, line)
        return finished
    return sent


def build_server() -> MCPServer:
    server = MCPServer(name="evalsite", instructions=INSTRUCTIONS, log_level="WARNING")
    for function, hints in TOOLS:
        server.add_tool(function, annotations=hints)
    return server


def serve() -> None:
    """Prepare the database and serve on stdin/stdout until the client closes them. Nothing
    but the protocol goes to stdout: start-up output is sent to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        prepare_database()
    build_server().run("stdio")
