"""Planning a run: resolve contestants, prices, keys and replies; estimate it
(runs.planning.estimates); store the plan.

Everything that can refuse a run happens here, before the first provider call: an unknown
model or variant, a missing key, a replies file without a case, an estimate over the cap.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import hashlib
import itertools
import os
import secrets
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from evalsite.core.exitcodes import ExitCode
from evalsite.core.gate_subjects import unknown_subject_problems
from evalsite.core.judging import judge_config
from evalsite.core.plan import (
    Cell,
    SelectionError,
    call_hashes,
    plan_cells,
)
from evalsite.core.pricing import (
    UNPRICED_PROVIDERS,
    PriceRows,
    priced_as,
    resolve_models,
    suggest,
    suggest_model,
    unknown_model_message,
)
from evalsite.core.problems import format_path
from evalsite.core.prompts import media_refusals
from evalsite.core.providers import (
    Provider,
    ProviderError,
    RepliesFileError,
    ScriptedReplies,
    build_contestant_providers,
    required_key,
)
from evalsite.core.providers.http_clients import prepare_client_soon
from evalsite.core.providers.http_json import over_http
from evalsite.core.scoring.sandbox import OPT_OUT_SETTING
from evalsite.core.suite_params import Note, parameter_notes, parameter_problems
from evalsite.core.suites import Contestant, Suite, parse_contestant
from runs import sealed
from runs.engine.sandbox import sandbox_or_none
from runs.models import (
    Answer,
    Call,
    Endpoint,
    NoActivePriceTable,
    PriceTable,
    Run,
    SuiteVersion,
    text_sha,
)
from runs.models.rows import insert_each
from runs.models.run import StoredOptions, calls_in_flight, label_problem
from runs.planning import estimates
from runs.sealed import Sealed

DEFAULT_CAP_USD = Decimal("2.00")
ANSWER_BATCH = 2000
# Stored with the run before its first call; the rest beside the first calls (start_plan).
# At least a first claim's worth at C = 256 (runs.engine.runner: C + C / 2 calls).
FIRST_ANSWERS = 512

# A given answer's text by (task, case, contestant): answers supplied, not generated.
GivenAnswers = Mapping[tuple[str, str, str], str]

if TYPE_CHECKING:  # the report package is not imported to validate a suite
    from evalsite.core.report.case_diff import CaseBaseline


class PlanError(Exception):
    """A run that cannot start; `code` is the exit code (2 input, 4 refused over the cap)."""

    def __init__(self, message: str, code: ExitCode = ExitCode.INPUT_ERROR):
        super().__init__(message)
        self.code = code


@dataclass
class RunOptions:
    models: list[str] | None = None
    fake: bool = False
    replies: str | None = None
    max_cost: Decimal | None = None
    no_cache: bool = False
    repeats: int | None = None
    only: list[str] = field(default_factory=list)  # task or task/case selectors, any number
    tags: list[str] = field(default_factory=list)  # keep a case with any of these tags
    limit: int | None = None  # the first N cases of each task, after `only` and `tags`
    label: str = ""
    concurrency: int | None = None
    judge: str | None = None  # overrides the suite's judge model (e.g. scripted/… in CI)
    dry_run: bool = False  # an estimate only: missing keys are listed, not refused
    no_look: bool = False  # no case data written (docs/no-look.md); the suite may say so too
    datasource: bool = False  # some task's cases were read from a source (never resumed)
    strict_gates: bool = False  # a gate on a contestant not in the run fails (docs/ci.md)
    baseline: CaseBaseline | None = None  # `run --baseline`: what each case is held against
    default_cap: Decimal = DEFAULT_CAP_USD
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))


@dataclass
class Plan:
    """A resolved run before it is stored (also what --dry-run prints). ``version`` may be
    None until the plan is stored, for a suite registered only if its run goes ahead (the
    judge lab's); ``given`` holds the answers of a plan whose answers were supplied."""

    version: SuiteVersion | None
    suite: Suite
    contestants: list[str]
    table: PriceTable
    cap: Decimal
    cells: list[Cell]
    hashes: list[str]
    cached: list[bool]
    estimate: dict
    options: RunOptions
    judge_model: str | None = None
    keys: dict[str, list[str]] = field(default_factory=dict)  # variable → models needing it
    given: GivenAnswers | None = None
    notes: list[Note] = field(default_factory=list)  # parameters a model will not be sent
    no_sandbox: str | None = None  # a dry run's: why the real run would be refused (no sandbox)
    aliases: dict[str, str] = field(default_factory=dict)  # a model priced by another's row

    @property
    def registered_version(self) -> SuiteVersion:
        """The suite version the plan runs; LookupError for a plan of a suite not registered
        (a dry run's, or the judge lab's before it registers the suite to run it)."""
        if self.version is None:
            raise LookupError(f"the plan of suite {self.suite.name} has no registered version")
        return self.version

    @property
    def missing_keys(self) -> list[str]:
        return missing_keys(self.keys, self.options.env)

    @property
    def over_cap(self) -> bool:
        return Decimal(self.estimate["total_usd"]) > self.cap


def _check_media(suite: Suite, contestants: list[str], options: RunOptions) -> None:
    """Refuse a contestant whose model does not take a media part a case sends (with
    --fake the fake answers every model, and it takes every part)."""
    if options.fake:
        return
    refused = media_refusals(suite, contestants)
    if refused:
        raise PlanError("; ".join(message for _, message in refused[:5]))


def _check_params(suite: Suite, contestants: list[str], judge_model: str | None) -> None:
    """Refuse a contestant (or judge) whose own parameters (its variant's params, the judge
    block's) its model does not take: `validate` refuses them for the suite's own models,
    this for --models and --judge."""
    refused = parameter_problems(suite, contestants, judge_model)
    if refused:
        raise PlanError("; ".join(f"{format_path(path)}: {text}" for path, text in refused[:5]))


def _check_sources(suite: Suite) -> None:
    """`evalsite run` and MCP's run_suite inline a datasource's cases before planning; a
    suite that still has one was never read (a web run): refused, so no run of it ends done
    with no answers."""
    unread = [task.id for task in suite.tasks if task.cases_from]
    if unread:
        raise PlanError(
            f"refused: the cases of {', '.join(unread)} come from a datasource (cases_from), "
            "which only `evalsite run` and MCP's run_suite read; nothing was started"
        )


def make_plan(
    version: SuiteVersion | None,
    suite: Suite,
    options: RunOptions,
    *,
    given: GivenAnswers | None = None,
) -> Plan:
    """Resolve and estimate a run of `suite`; PlanError (exit 2) for anything unusable.

    With `given`, every answer was supplied (the judge lab): none is requested, so none is
    hashed or costs anything, and the estimate is of the judge's calls on those answers."""
    if problem := label_problem(options.label):
        raise PlanError(f"--label: {problem}")
    _check_sources(suite)
    contestants = _contestants(suite, options.models)
    if not options.models and (unknown := unknown_subject_problems(suite.gate, suite.models)):
        raise PlanError("; ".join(unknown))
    _check_media(suite, contestants, options)
    if options.no_look or suite.no_look:
        options = _no_look_options(suite, options)
    try:
        table = PriceTable.objects.current()
    except NoActivePriceTable as error:
        raise PlanError(str(error)) from None
    rows = PriceRows(price.to_row() for price in table.prices.all())
    judge_model = _judge_model(suite, options.judge)
    _check_params(suite, contestants, judge_model)
    aliases = _check_prices(contestants, judge_model, rows, table.name)
    endpoints = Endpoint.objects.configs()
    keys = _check_keys(contestants, judge_model, endpoints, options)
    replies = load_replies(suite, options)
    _check_replies(suite, contestants, replies, options, judge_model)
    repeats = options.repeats or suite.repeats
    try:
        cells = plan_cells(
            suite, contestants, repeats=repeats, only=options.only, tags=options.tags,
            limit=options.limit,
        )  # fmt: skip
    except SelectionError as error:
        raise PlanError(f"--{error.option}: {error}") from None
    no_sandbox = sandbox_problem(suite, cells)
    if no_sandbox and not options.dry_run:
        raise PlanError(no_sandbox)
    if given is None:
        providers = _providers(contestants, endpoints, replies, options, keys)
        if not options.dry_run and over_http(providers.values()):
            prepare_client_soon()  # beside the rest of planning and storing the run
        hashes = call_hashes(cells, providers)
        cached = estimates.cached_flags(
            hashes, options.no_cache, [providers[c.contestant] for c in cells]
        )
        estimate = estimates.estimate(
            suite, cells, contestants, cached, rows, providers, judge_model
        )
    else:
        if any(task.graded for task in suite.tasks):
            raise PlanError("a run of given answers is judged in pairs only: no task may grade")
        hashes, cached = _given_hashes(cells, given), [False] * len(cells)
        judge, judge_row = None, None
        if judge_model:
            judge = _providers([judge_model], endpoints, replies, options, keys)[judge_model]
            judge_row = rows.get(judge_model)
        estimate = estimates.estimate_given(
            suite, cells, given, contestants, judge, judge_row, options.no_cache
        )
    cap = options.max_cost or suite.cap_usd or options.default_cap
    return Plan(
        version, suite, contestants, table, cap, cells, hashes, cached, estimate, options,
        judge_model, keys, given, parameter_notes(suite, contestants, judge_model), no_sandbox,
        aliases,
    )  # fmt: skip


def _no_look_options(suite: Suite, options: RunOptions) -> RunOptions:
    """A no-look run's options: the cache off (a cached reply is case data on disk).
    PlanError for what would write case data anyway: execution checks (the sandbox gets
    the answer and the vars as files)."""
    problem = no_look_problem(suite)
    if problem:
        raise PlanError(problem)
    return dataclasses.replace(options, no_look=True, no_cache=True)


def no_look_problem(suite: Suite) -> str | None:
    """Why the suite cannot run no-look: its execution checks (the sandbox gets files)."""
    checked = [task.id for task in suite.tasks if any(case.check for case in task.cases)]
    if not checked:
        return None
    return (
        "a no-look run cannot run execution checks (tasks: "
        f"{', '.join(checked)}): the sandbox is given the answer and the case's vars as "
        "files on disk; drop the `check:` blocks or run without no-look"
    )


def _contestants(suite: Suite, models: list[str] | None) -> list[str]:
    texts = list(models or suite.models)
    if not texts:
        raise PlanError(
            "a run needs a contestant (two or more to compare them): give --models a[,b] or "
            "`models:` in the suite"
        )
    out = [str(suite_contestant(suite, text)) for text in texts]
    if len(set(out)) != len(out):
        raise PlanError("a contestant appears twice in --models")
    return out


def suite_contestant(suite: Suite, text: str) -> Contestant:
    """`text` as a contestant of `suite`: a model string with, optionally, a variant the
    suite declares; PlanError naming what is wrong (with a did-you-mean) otherwise."""
    try:
        contestant = parse_contestant(text)
    except ValueError as error:
        raise PlanError(str(error)) from None
    if contestant.variant and contestant.variant not in suite.variants:
        hint = suggest(contestant.variant, suite.variants)
        tail = f" - did you mean '@{hint}'?" if hint else ""
        raise PlanError(f"unknown variant '@{contestant.variant}' in '{text}'{tail}")
    return contestant


def _judge_model(suite: Suite, override: str | None = None) -> str | None:
    """The judge's model string: `--judge`, else the suite's; None when no task is judged
    or graded (or the suite has no judge block and no override)."""
    judged = any(task.judge or task.graded for task in suite.tasks)
    if not judged:
        return None
    if override:
        try:
            return parse_contestant(override).model
        except ValueError as error:
            raise PlanError(f"--judge: {error}") from None
    return suite.judge_model


def _check_prices(contestants, judge_model, rows: PriceRows, table: str) -> dict[str, str]:
    """The run's models each priced (else PlanError); those priced by another model's row
    (a dated snapshot's), each with that row's model."""
    models = [parse_contestant(c).model for c in contestants] + [judge_model or ""]
    priced = list(filter(None, dict.fromkeys(models)))
    check_priced(priced, rows, table)
    return dict(resolve_models(priced, rows).aliases)


def check_priced(models: Iterable[str], rows: Collection[str], table: str) -> None:
    """PlanError naming the first of `models` the table `table` (its `rows` by model) has
    no price for (by core pricing's one rule, `priced_as`), unless its provider costs
    nothing without one (scripted, command)."""
    for model in models:
        if priced_as(model, rows) is not None or model.partition("/")[0] in UNPRICED_PROVIDERS:
            continue
        raise PlanError(unknown_model_message(model, suggest_model(model, rows), table))


def needed_keys(models, endpoints, *, fake: bool = False) -> dict[str, list[str]]:
    """The environment variables a real run of `models` needs, each with the models that
    need it (none for fake, scripted and command models). PlanError for an unknown provider."""
    keys: dict[str, list[str]] = {}
    for model in filter(None, dict.fromkeys(models)):
        try:
            name = required_key(model, endpoints=endpoints, fake=fake)
        except ProviderError as error:
            raise PlanError(str(error)) from None
        if name:
            keys.setdefault(name, []).append(model)
    return keys


def missing_keys(keys: Mapping[str, list[str]], env: Mapping[str, str]) -> list[str]:
    """The variables of `keys` that `env` does not set (blank counts as not set)."""
    return [name for name in keys if not env.get(name, "").strip()]


def keys_line(keys: dict[str, list[str]], env) -> str:
    """One line naming each key a real run needs and whether it is set here."""
    if not keys:
        return "keys: none needed"
    shown = [
        f"{name} ({'set' if env.get(name, '').strip() else 'not set'}; for {', '.join(models)})"
        for name, models in keys.items()
    ]
    return "keys the real run needs: " + ", ".join(shown)


def _check_keys(contestants, judge_model, endpoints, options: RunOptions) -> dict[str, list[str]]:
    models = [parse_contestant(c).model for c in contestants] + [judge_model or ""]
    keys = needed_keys(models, endpoints, fake=options.fake)
    missing = [f"{name} (for {', '.join(keys[name])})" for name in missing_keys(keys, options.env)]
    if missing and not options.dry_run:
        raise PlanError(
            "missing API keys, set them in the environment before running: " + ", ".join(missing)
        )
    return keys


def load_replies(suite: Suite, options: RunOptions) -> ScriptedReplies | None:
    path = options.replies or (str(suite.replies_path) if suite.replies_path else None)
    if path is None:
        return None
    try:
        return ScriptedReplies.load(path)
    except RepliesFileError as error:
        raise PlanError(str(error)) from None


def _check_replies(suite, contestants, replies, options: RunOptions, judge_model) -> None:
    scripted = [c for c in contestants if c.startswith("scripted/") and not options.fake]
    scripted_judge = bool(judge_model and judge_model.startswith("scripted/") and not options.fake)
    if scripted_judge:
        if replies is None:
            raise PlanError("a scripted judge needs a replies file: --replies FILE or `replies:`")
        judged = [(t.id, c.id) for t in suite.tasks if t.judge for c in t.cases]
        missing = replies.missing_judge(judge_model.partition("/")[2], judged)
        if missing:
            shown = ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "")
            raise PlanError(f"{replies.filename} has no verdicts for {judge_model} on: {shown}")
    if not scripted:
        return
    if replies is None:
        raise PlanError("scripted contestants need a replies file: --replies FILE or `replies:`")
    cases = [(t.id, c.id) for t in suite.tasks for c in t.cases]
    for contestant in scripted:
        chosen = parse_contestant(contestant)
        missing = replies.missing(chosen.model.partition("/")[2], cases, chosen.variant)
        if missing:
            shown = ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "")
            raise PlanError(f"{replies.filename} has no reply for {contestant} on: {shown}")


def execution_checked(suite: Suite, cells: list[Cell] | None = None) -> bool:
    """Whether a case of `cells` (of the suite, when None) has an execution check."""
    if cells is None:
        return any(case.check for task in suite.tasks for case in task.cases)
    return any(suite.task(c.task_id).case(c.case_id).check for c in cells)


def sandbox_problem(suite: Suite, cells: list[Cell] | None = None) -> str | None:
    """Why the execution checks of `cells` (every case of the suite when None) cannot run
    here: they run only in the sandbox, unless the operator opted out. A run is refused
    for it; a dry run and `validate` say it, as they do a missing key."""
    if not execution_checked(suite, cells) or sandbox_or_none() is not None:
        return None
    return (
        "this run has execution checks and no sandbox is available: install bubblewrap "
        f"(apt-get install bubblewrap), or set {OPT_OUT_SETTING}=1 to run them unsandboxed"
    )


def _providers(contestants, endpoints, replies, options: RunOptions, keys) -> dict[str, Provider]:
    """The contestants' providers; for a dry run a key that is not set is stood in for (the
    providers only prepare requests for their cache keys: no call is made)."""
    env = options.env
    if options.dry_run:
        env = {name: "dry-run: not set" for name in keys} | {
            name: value for name, value in env.items() if value.strip()
        }
    try:
        return build_contestant_providers(
            contestants, env=env, endpoints=endpoints, replies=replies, fake=options.fake
        )
    except ProviderError as error:
        raise PlanError(str(error)) from None


# --- a plan of given answers ----------------------------------------------------------------


def _given_hashes(cells: list[Cell], given: GivenAnswers) -> list[str]:
    """A given answer is never requested: its row keeps its text's sha as its hash."""
    try:
        return [text_sha(given[c.task_id, c.case_id, c.contestant]) for c in cells]
    except KeyError as missing:
        task_id, case_id, contestant = missing.args[0]
        raise PlanError(f"no given answer of {contestant} for {task_id}/{case_id}") from None


# --- storing the plan ---------------------------------------------------------------------


def new_run_id(suite_hash: str, contestants: list[str]) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    joined = hashlib.sha256("\n".join(contestants).encode()).hexdigest()[:8]
    return f"{stamp}_{suite_hash[:8]}_{joined}_{secrets.token_hex(2)}"


@transaction.atomic
def store_plan(plan: Plan, *, user=None, form_submission: str = "") -> Run:
    """The Run and its pending Answer rows, in one transaction; a run over its cap is stored
    as refused. `form_submission` is the launch form's token (runs.planning.launch), when
    it came from one."""
    run = _create_run(plan, user, form_submission, whole=True)
    if run.status != Run.Status.REFUSED:
        for batch in itertools.batched(_answer_rows(run, plan), ANSWER_BATCH):
            with transaction.atomic():  # a savepoint a batch
                insert_each(Answer, batch)
    return run


def start_plan(plan: Plan) -> tuple[Run, PlanRest | None]:
    """The Run and its first :data:`FIRST_ANSWERS` answer rows, in one transaction, for
    this process to execute (runs.engine.local.execute_here); and the rest of its plan, to
    store on the run's own database thread while its first calls are in flight (their
    network wait hides most of the storing: docs/performance.md). None when there is no
    rest (a small plan, a run refused over its cap).

    Until the rest is stored the run's ``plan_stored_at`` is empty: it is never judged or
    reported on its first rows alone, and a run whose process stopped first is closed by
    the workers' sweep (:func:`runs.engine.tasks.resume_stalled_runs`)."""
    whole = plan.over_cap or len(plan.cells) <= FIRST_ANSWERS
    with transaction.atomic():
        run = _create_run(plan, None, "", whole=whole)
        if run.status == Run.Status.REFUSED:
            return run, None
        rows = _answer_rows(run, plan)
        insert_each(Answer, itertools.islice(rows, FIRST_ANSWERS))
    return run, (None if whole else PlanRest(run, rows))


class PlanRest:
    """The answer rows of a run after its first ones (:func:`start_plan`), stored a batch
    at a time by the process that planned them, so the run's claims and writes on the same
    database thread go between two batches; the last batch makes the plan whole. A batch
    that cannot be stored (a full disk) fails the run: a plan stored in part is never run.
    What runs.engine.runner.PlanRemainder asks of it."""

    def __init__(self, run: Run, rows: Iterator[dict[str, Any]]) -> None:
        self.run = run
        # Each batch with the one after it, () after the last: the last marks the plan whole
        # in its own transaction. None once it has ended (the plan's cells freed).
        batches = itertools.chain(itertools.batched(rows, ANSWER_BATCH), [()])
        self.steps: Iterator[tuple[tuple, tuple]] | None = itertools.pairwise(batches)

    def store_next(self) -> bool:
        """Store the next batch (the last one marks the plan whole); whether any is left."""
        if self.steps is None:
            return False
        try:
            batch, following = next(self.steps, ((), ()))
            with transaction.atomic():
                insert_each(Answer, batch)
                if not following:
                    self.run.mark_plan_whole()
        except BaseException as error:
            self.steps = None  # nothing more is stored
            with contextlib.suppress(Exception):  # if this fails too, the sweep closes it
                self.run.fail_unstored_plan(f"storing the rest failed: {error}")
            raise
        if not following:
            self.steps = None
        return self.steps is not None


def _answer_rows(run: Run, plan: Plan) -> Iterator[dict[str, Any]]:
    """The plan's answer rows, in the order of its cells, made as they are stored: a list
    of 100,000 rows with their requests took 390 MB at once. Stored with prepared INSERTs
    (insert_each), not bulk_create, which spent most of its time building the SQL
    (docs/performance.md)."""
    held = sealed.seal(run.id, run.suite_version_id, plan.suite) if run.no_look else None
    for cell, digest in zip(plan.cells, plan.hashes, strict=True):
        yield _answer(run, cell, digest, plan.given, held)


def _create_run(plan: Plan, user, form_submission: str, *, whole: bool) -> Run:
    options, version = plan.options, plan.registered_version
    run = Run.objects.create(
        id=new_run_id(version.sha256, plan.contestants),
        suite_version=version,
        contestants=plan.contestants,
        judge=judge_config(plan.suite, plan.judge_model) if plan.judge_model else {},
        repeats=options.repeats or plan.suite.repeats,
        price_table=plan.table,
        options=_stored_options(plan, form_submission),
        label=options.label,
        estimate=plan.estimate,
        cap_usd=plan.cap,
        created_by=user if user is not None and user.is_authenticated else None,
        no_look=options.no_look,
        plan_stored_at=timezone.now() if whole else None,
    )
    if plan.over_cap:
        run.finish(Run.Status.REFUSED, _over_cap_message(plan))
    return run


def _answer(
    run: Run, cell: Cell, digest: str, given: GivenAnswers | None, held: Sealed | None = None
) -> dict[str, Any]:
    """The row of one cell: pending, or with a given answer done already and free (the
    engine scores and judges it and never requests it). A no-look run's row keeps the
    request without its messages; this process keeps the request (:mod:`runs.sealed`)."""
    answer: dict[str, Any] = {
        "run_id": run.pk,
        "task_id": cell.task_id,
        "case_id": cell.case_id,
        "contestant": cell.contestant,
        "repeat": cell.repeat,
        "request": held.row_request(cell.request, digest) if held else cell.request.to_json(),
        "request_hash": digest,
    }
    if given is not None:
        answer["text"] = given[cell.task_id, cell.case_id, cell.contestant]
        answer["status"] = Call.Status.DONE
        answer["cost_usd"] = answer["cost_if_uncached_usd"] = Decimal(0)
        answer["finished_at"] = timezone.now()
    return answer


def _stored_options(plan: Plan, form_submission: str) -> dict:
    """What a worker needs to redo the plan; never a key (keys come from its environment)."""
    options = plan.options
    replies = options.replies or (str(plan.suite.replies_path) if plan.suite.replies_path else "")
    return StoredOptions(
        fake=options.fake,
        no_cache=options.no_cache,
        replies=str(Path(replies).resolve()) if replies else "",
        only=tuple(options.only),
        tags=tuple(options.tags),
        limit=options.limit,
        concurrency=calls_in_flight(options.concurrency),
        form_submission=form_submission,
        datasource=options.datasource,
        strict_gates=options.strict_gates,
        baseline=options.baseline.to_json() if options.baseline else {},
    ).to_json()


def _over_cap_message(plan: Plan) -> str:
    return (
        f"refused: the estimate ${Decimal(plan.estimate['total_usd']):.4f} is over the cap "
        f"${plan.cap:.4f}; nothing was spent (raise --max-cost or limits.max_cost_usd)"
    )
