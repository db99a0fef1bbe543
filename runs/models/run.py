"""A run: a suite version answered by contestants, priced from one table."""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import asdict, dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.db.models import Exists, ExpressionWrapper, F, OuterRef, Q
from django.db.models.functions import Now
from django.db.models.lookups import GreaterThanOrEqual, LessThan
from django.db.models.query import ModelIterable

if TYPE_CHECKING:
    from django.db.models.expressions import Combinable
from django.utils import timezone

from evalsite.core.exitcodes import ExitCode
from evalsite.core.pricing import from_nano, to_nano
from runs.kept import Kept
from runs.models.pricing import PriceTable
from runs.models.rows import column_name
from runs.models.suites import Suite, SuiteVersion

if TYPE_CHECKING:
    from evalsite.core.report.case_diff import CaseBaseline


class MoneyField(models.BigIntegerField):
    """USD: a Decimal in Python, whole nano-USD (1e-9 USD) in the database.

    A DecimalField is a REAL on SQLite, and ``F()`` arithmetic and ``Sum()`` there run in
    binary floating point (a reservation ended at -2e-17, a spend 3e-14 off). Integers add
    exactly on every backend. Values are rounded half-even to the nano when stored; reads,
    ``values()`` and ``Sum()`` give Decimal USD. An expression that writes one of these
    columns (``F("x") + n``) must add whole nano-USD: see :meth:`Run.reserve`.
    """

    description = "USD, stored as whole nano-USD"
    # What django-stubs' plugin types the model attribute as: set from any amount, read as
    # Decimal (Optional where the column is null=True). These are the plugin's own hooks;
    # they narrow BigIntegerField's int the way the stubs' NullBooleanField narrows its
    # base, with the same ignore (field generics cannot say "Optional when null=True").
    _pyi_private_set_type: Decimal | int | str | Combinable  # type: ignore[assignment]
    _pyi_private_get_type: Decimal  # type: ignore[assignment]

    def from_db_value(self, value, expression, connection):
        return None if value is None else from_nano(value)

    def to_python(self, value):
        if value is None or isinstance(value, Decimal):
            return value
        try:
            return Decimal(str(value))
        except InvalidOperation:
            raise ValidationError(f"{value!r} is not an amount of USD", code="invalid") from None

    def get_prep_value(self, value):
        value = models.Field.get_prep_value(self, value)
        return None if value is None else to_nano(self.to_python(value))

    def formfield(self, **kwargs):
        return models.Field.formfield(
            self, **{"form_class": forms.DecimalField, "decimal_places": 9, **kwargs}
        )


# IntegerField's own >= and < round a float bound up to a whole number: of USD, here.
MoneyField.register_lookup(GreaterThanOrEqual)
MoneyField.register_lookup(LessThan)


@functools.cache
def _reserve_sql() -> str:
    """Run.reserve's conditional UPDATE (the same as ``filter(fits, pk=…, status__in=ACTIVE)
    .update(reserved_usd=F("reserved_usd") + nano)``), with the amount, the run's id, its
    active statuses, the amount again and the cap as parameters."""
    quote = connection.ops.quote_name
    reserved, answers, judge = (
        quote(column_name(Run, name))
        for name in ("reserved_usd", "spent_answers_usd", "spent_judge_usd")
    )
    statuses = ", ".join(["%s"] * len(Run.ACTIVE))
    return (
        f"UPDATE {quote(Run._meta.db_table)} SET {reserved} = {reserved} + %s "  # noqa: S608
        f"WHERE {quote(column_name(Run, 'pk'))} = %s "
        f"AND {quote(column_name(Run, 'status'))} IN ({statuses}) "
        f"AND {reserved} + {answers} + {judge} + %s <= %s"
    )


@dataclass(frozen=True)
class StoredOptions:
    """How a run was asked to go, as stored on it (``Run.options``): what any worker needs to
    redo its plan, and what the report says to reproduce it. Never a key: keys come from the
    environment of the process that makes the calls."""

    fake: bool = False
    no_cache: bool = False
    replies: str = ""  # the absolute path of the scripted replies file, or ""
    only: tuple[str, ...] = ()  # task or task/case selectors; () for the whole suite
    tags: tuple[str, ...] = ()  # cases with any of these tags; () for every case
    limit: int | None = None  # the first N cases of each task; None for all of them
    concurrency: int | None = None  # calls in flight per model across the run's shards
    form_submission: str = ""  # the launch form's token, so a resubmission is one run
    datasource: bool = False  # some task's cases were read from a source: never resumed
    strict_gates: bool = False  # --strict-gates: a gate on a contestant not in the run fails
    # `run --baseline`: what each case is held against, its rows with it (CaseBaseline's
    # JSON), so the report's gate reads the verdict (core.gates); {} without one
    baseline: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict) -> StoredOptions:
        concurrency, limit = data.get("concurrency"), data.get("limit")
        return cls(
            fake=bool(data.get("fake")),
            no_cache=bool(data.get("no_cache")),
            replies=data.get("replies") or "",
            only=tuple(filter(None, (data.get("only") or "").split(","))),
            tags=tuple(data.get("tags") or ()),
            limit=int(limit) if limit else None,
            concurrency=int(concurrency) if concurrency else None,
            form_submission=data.get("form_submission") or "",
            datasource=bool(data.get("datasource")),
            strict_gates=bool(data.get("strict_gates")),
            baseline=_baseline_json(data.get("baseline")),
        )

    @property
    def case_baseline(self) -> CaseBaseline | None:
        from evalsite.core.report.case_diff import CaseBaseline  # the report package, lazily

        return CaseBaseline.from_json(self.baseline)

    @property
    def partial(self) -> bool:
        """Whether the run answers only some of its suite's cases (never its calibration)."""
        return bool(self.only or self.tags or self.limit)

    def to_json(self) -> dict:
        # `only` is stored comma-joined, "" for the whole suite; `tags` a list, `limit` a
        # number or null (RunQuerySet.whole_suite reads all three).
        return asdict(self) | {"only": ",".join(self.only), "tags": list(self.tags)}


def _baseline_json(value: Any) -> dict[str, Any]:
    """The stored --baseline: its JSON; a run stored before the rows were kept has its name
    alone, which holds nothing (no rows to compare)."""
    return value if isinstance(value, dict) else {}


def calls_in_flight(concurrency: int | None) -> int:
    """Calls in flight per model across a run: what it asked for, else
    EVALSITE_MAX_CONCURRENCY (default :data:`evalsite.core.pacing.DEFAULT_MAX_CONCURRENCY`)."""
    return concurrency or settings.EVALSITE_MAX_CONCURRENCY


def lease_expiry(lease_s: float) -> ExpressionWrapper:
    """The moment, by the database's clock, before which a claim's lease has run out."""
    return ExpressionWrapper(
        Now() - dt.timedelta(seconds=lease_s), output_field=models.DateTimeField()
    )


# What a run id starts like (``20261203T141439Z_<suite>_<models>_<random>``, runs.planning.planner):
# digits of the date, the T, the time, the Z. A reference of this shape is an id or an id
# prefix, and a label of it would hide the run it names.
_RUN_ID_START = re.compile(r"\d{1,8}|\d{8}T\d{0,6}|\d{8}T\d{6}Z.*", re.DOTALL)
RESERVED_REFERENCES = ("latest", "baseline")
MAX_LABEL = 64


REPORT_FILE = "report.json"
_REPORT_RUN_ID = re.compile(rb'"run_id"\s*:\s*"([^"\\]{1,200})"')
_REPORT_HEAD = 64 * 1024  # where a report.json written by evalsite says its run id


def report_run_id(reference: str) -> str | None:
    """The id of the run whose report `reference` names by path (evalmine compares reports
    by path): a report.json, or the report folder holding one; None when it names neither.
    The folder of a report written here is named after its run; a report copied elsewhere
    says its run id near its start."""
    path = Path(reference)
    try:
        if path.is_dir():
            path = path / REPORT_FILE
        if path.name != REPORT_FILE or not path.is_file():
            return None
        if Run.objects.filter(pk=path.parent.name).exists():
            return path.parent.name
        with path.open("rb") as handle:
            head = handle.read(_REPORT_HEAD)
    except (OSError, ValueError):
        return None
    found = _REPORT_RUN_ID.search(head)
    return found.group(1).decode("utf-8", "replace") if found else ""


def looks_like_run_id(reference: str) -> bool:
    """Whether `reference` has the shape of a run id or the start of one."""
    return _RUN_ID_START.fullmatch(reference) is not None


def label_problem(label: str) -> str | None:
    """Why `label` cannot name a run (it would hide a run id, ``latest`` or ``baseline``,
    or does not fit), or None. Every door that sets a label asks this."""
    if len(label) > MAX_LABEL:
        return f"a label is at most {MAX_LABEL} characters (this one has {len(label):,})"
    if label in RESERVED_REFERENCES:
        return f"{label!r} already names a run ({label} is a reference of its own): choose another"
    if looks_like_run_id(label):
        return (
            f"{label!r} looks like a run id or the start of one (they begin "
            "YYYYMMDDTHHMMSSZ_), which a label must not hide: choose one that does not"
        )
    return None


class RunQuerySet(models.QuerySet["Run"]):
    def for_suite(self, suite: Suite) -> RunQuerySet:
        return self.filter(suite_version__suite=suite)

    def active(self) -> RunQuerySet:
        return self.filter(status__in=Run.ACTIVE)

    def finished(self) -> RunQuerySet:
        return self.exclude(status__in=Run.ACTIVE)

    def not_lab(self) -> RunQuerySet:
        """Runs of the team's suites: a judge-lab run lives under the judge lab only."""
        return self.exclude(suite_version__origin="lab")

    def listing(self, *, suite: Suite | None = None, status: str | None = None) -> RunQuerySet:
        """The runs `evalsite list` shows, newest first: of `suite` and in `status` when
        given, judge-lab runs left out (the judge lab lists its own)."""
        runs = self.not_lab().named()
        if suite is not None:
            runs = runs.for_suite(suite)
        if status is not None:
            runs = runs.filter(status=status)
        return runs.order_by("-created_at", "-pk")

    def named(self) -> RunQuerySet:
        """Runs with what lists and pickers show of each (:attr:`Run.display_line`: label or
        short id, suite, contestants, headline, cost, age): the suite joined, the estimate
        and the suite's document left, and the reports of only the runs whose headline this
        process has not kept (:attr:`Run.headline`), read in one more query."""
        named = self.select_related("suite_version__suite").defer("estimate", *Run.BULKY)
        named._iterable_class = _WithHeadlines
        return named

    def for_pages(self) -> RunQuerySet:
        """Runs as a run's pages read them: the suite, price table and creator joined; the
        stored report and the suite's text and document left, megabytes of JSON on a big
        run that most pages never show (the run page reads its report's sections once a
        process, the suite's parse is kept by :meth:`SuiteVersion.core_suite`)."""
        related = ("suite_version__suite", "price_table", "created_by")
        return self.select_related(*related).defer("estimate", *Run.BULKY)

    def judged(self) -> RunQuerySet:
        """Runs with at least one pair the judge scored."""
        from runs.models.judging import Pair

        return self.filter(Exists(Pair.objects.filter(run=OuterRef("pk"), score__isnull=False)))

    def whole_suite(self) -> RunQuerySet:
        """Runs of every case of their suite: no ``--only``, ``--tag`` or ``--limit`` (runs
        stored before a filter existed have no key for it)."""
        return self.filter(
            Q(options__only="") | ~Q(options__has_key="only"),
            Q(options__tags__0__isnull=True),
            Q(options__limit=None) | Q(options__limit__isnull=True),
        )

    def calibration_choices(self) -> RunQuerySet:
        """The runs a suite's calibration may be read from: finished, judged, not lab, not
        no-look (nobody may read a no-look run's answers, so nobody labels them)."""
        finished = self.not_lab().filter(status=Run.Status.DONE, report__isnull=False)
        return finished.exclude(no_look=True).judged()

    def calibration_run(self, suite: Suite, chosen: str | None = None) -> Run | None:
        """The suite's calibration run (SPEC §19): `chosen` when it is one of the suite's
        calibration choices, else the pinned baseline when it is judged, else the latest
        finished, judged, whole-suite run that is not a lab run."""
        runs = (
            self.for_suite(suite)
            .calibration_choices()
            .select_related("suite_version__suite")
            .defer("estimate", *Run.BULKY)
        )
        for pk in (chosen, suite.baseline_run_id):
            if pk:
                run = runs.filter(pk=pk).first()
                if run is not None:
                    return run
        return runs.whole_suite().order_by("-created_at").first()

    def resolve(
        self,
        reference: str,
        suite: Suite | None = None,
        *,
        with_report: bool = False,
        paths: bool = False,
    ) -> Run:
        """A run by id, unique id prefix, label (the latest run with it), ``latest`` (the
        latest run with a report, of `suite` when one is implied) or ``baseline`` (the
        pinned baseline of `suite`, or of the only suite that has one); with `paths` (the
        CLI's, never a remote caller's), also by the path of its report.json or report
        folder.

        Run.DoesNotExist with a message saying what was tried, or naming the candidates
        when a prefix is ambiguous; Run.NoReport when `with_report` and the run has none.
        """
        runs = self.select_related("suite_version__suite")
        run_id = report_run_id(reference) if paths else None
        run: Run | None
        if run_id is not None:
            run = runs.filter(pk=run_id).first() if run_id else None
            if run is None:
                named = f"run {run_id}" if run_id else "no run id"
                raise Run.DoesNotExist(
                    f"{reference}: a report of {named}, which is not in this data dir "
                    f"({settings.DATA_DIR})"
                )
        else:
            run = runs._resolve(reference, suite)
        if with_report and run.report is None:
            raise Run.NoReport(run)
        return run

    def _resolve(self, reference: str, suite: Suite | None) -> Run:
        reference = reference.strip()
        if reference == "latest":
            runs = self.for_suite(suite) if suite is not None else self
            run = runs.filter(report__isnull=False).order_by("-created_at").first()
            if run is None:
                where = f" of suite {suite.name}" if suite is not None else ""
                raise Run.DoesNotExist(f"there is no run with a report{where} yet")
            return run
        if reference == "baseline":
            return self._baseline(suite)
        exact = self.filter(pk=reference).first()
        if exact is not None:
            return exact
        # A reference shaped like a run id is one: a label spelled so (stored before labels
        # were checked) never hides the run it prefixes.
        if looks_like_run_id(reference):
            return self._by_prefix(reference) or self._by_label(reference) or self._none(reference)
        return self._by_label(reference) or self._by_prefix(reference) or self._none(reference)

    def _by_label(self, reference: str) -> Run | None:
        return self.filter(label=reference).order_by("-created_at").first()

    def _by_prefix(self, reference: str) -> Run | None:
        matches = list(self.filter(pk__startswith=reference).values_list("pk", flat=True)[:6])
        if len(matches) == 1:
            return self.get(pk=matches[0])
        if matches:
            shown = ", ".join(matches[:5])
            raise Run.DoesNotExist(f"{reference!r} matches several runs: {shown}")
        return None

    def _none(self, reference: str) -> NoReturn:
        raise Run.DoesNotExist(f"no run has the id, id prefix or label {reference!r}")

    def _baseline(self, suite: Suite | None) -> Run:
        if suite is not None:
            if suite.baseline_run_id is None:
                raise Run.DoesNotExist(f"suite {suite.name} has no pinned baseline")
            return self.get(pk=suite.baseline_run_id)
        pinned = list(
            Suite.objects.exclude(baseline_run=None).values_list("baseline_run_id", flat=True)[:2]
        )
        if len(pinned) != 1:
            raise Run.DoesNotExist(
                "no suite has a pinned baseline"
                if not pinned
                else "several suites have a pinned baseline: name the suite"
            )
        return self.get(pk=pinned[0])

    def ended_holding_claims(self, lease_s: float) -> RunQuerySet:
        """Runs that have ended while a claim older than the lease is still on them: a shard
        killed outright before another shard ended the run (aborted it, failed it) left
        them, with their reservations. The other half of :meth:`stalled`'s sweep.

        Each kind of call is an EXISTS of its own: joining both tables paired each answer of
        a run with each of its judge calls, and a worker starting beside a finished
        100,000-pair run spent minutes of a core in this one query."""
        from runs.models.answer import Answer
        from runs.models.judging import Judgement

        expired = lease_expiry(lease_s)
        held = {"run": OuterRef("pk"), "status": "claimed", "claimed_at__lt": expired}
        answers = Exists(Answer.objects.filter(**held))
        judgements = Exists(Judgement.objects.filter(**held))
        return self.exclude(status__in=Run.ACTIVE).filter(answers | judgements)

    def stalled(self, lease_s: float) -> RunQuerySet:
        """Active runs that nobody is working on: no claim or finished call younger than the
        lease since the phase began (a killed worker or `evalsite run` process), or queued
        for longer than the lease without starting. Runs asked to cancel are included: the
        shard that picks one up closes it."""
        recent = timezone.now() - dt.timedelta(seconds=lease_s)
        answering = (
            self.filter(
                Q(phase_at__lt=recent) | Q(phase_at__isnull=True), status=Run.Status.RUNNING
            )
            .exclude(answers__status="claimed", answers__claimed_at__gte=lease_expiry(lease_s))
            .exclude(answers__finished_at__gte=recent)
        )
        # Judging and reporting: nothing claimed or finished for a lease since the phase began.
        later = (
            self.filter(
                status__in=[Run.Status.JUDGING, Run.Status.REPORTING],
                phase_at__lt=recent,
            )
            .exclude(judgements__claimed_at__gte=lease_expiry(lease_s))
            .exclude(judgements__finished_at__gte=recent)
        )
        # Queued for a lease and never started: its shards were lost by the broker (a Redis
        # restarted without persistence, or down when the run was queued) or never sent.
        queued = self.filter(status=Run.Status.QUEUED, created_at__lt=recent)
        ids = set(answering.values_list("pk", flat=True)) | set(later.values_list("pk", flat=True))
        return self.filter(pk__in=ids | set(queued.values_list("pk", flat=True)))


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        JUDGING = "judging"
        REPORTING = "reporting"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"
        REFUSED = "refused"
        ABORTED_OVER_BUDGET = "aborted_over_budget"

    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.JUDGING, Status.REPORTING)

    class NoReport(Exception):
        """The run exists but has no report (yet, or ever): what state it is in."""

        def __init__(self, run: Run):
            self.run = run
            state = f"it is {run.status}" + (f": {run.detail}" if run.detail else "")
            super().__init__(f"run {run.id} has no report ({state})")

    STOPPED = (Status.CANCELLED, Status.ABORTED_OVER_BUDGET)  # ended early: a partial report
    # What pages and lists leave unread until asked for (RunQuerySet.for_pages, .named): the
    # stored report and the suite's text and document, megabytes of JSON on a big run.
    BULKY = ("report", "suite_version__yaml_text", "suite_version__parsed")

    id = models.CharField(max_length=64, primary_key=True)
    suite_version = models.ForeignKey(SuiteVersion, on_delete=models.PROTECT, related_name="runs")
    contestants = models.JSONField(help_text="Contestant strings, baseline first.")
    judge = models.JSONField(default=dict)
    repeats = models.PositiveSmallIntegerField(default=1)
    price_table = models.ForeignKey(PriceTable, on_delete=models.PROTECT, related_name="runs")
    options = models.JSONField(default=dict)
    label = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.QUEUED)
    detail = models.TextField(blank=True, help_text="Why the run was refused, failed or stopped.")
    cancel_requested = models.BooleanField(default=False)
    estimate = models.JSONField(null=True, blank=True)
    cap_usd = models.DecimalField(max_digits=12, decimal_places=6)
    # Summed and updated with F(): whole nano-USD in the database (MoneyField). The cap is
    # only read, and compared in Python units (Run.reserve), so it stays a decimal.
    reserved_usd = MoneyField(default=Decimal(0))
    spent_answers_usd = MoneyField(default=Decimal(0))
    spent_judge_usd = MoneyField(default=Decimal(0))
    uncached_usd = MoneyField(default=Decimal(0))
    cost_incomplete = models.BooleanField(default=False)
    stopped_models = models.JSONField(
        default=list,
        blank=True,
        help_text="Models that refused a call of this run (auth, bad request): not called again.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    resumed_at = models.DateTimeField(null=True, blank=True)
    phase_at = models.DateTimeField(null=True, blank=True, help_text="When the status last moved.")
    report = models.JSONField(null=True, blank=True)
    no_look = models.BooleanField(
        default=False,
        help_text="No case data is written (docs/no-look.md): run only by the process that "
        "started it.",
    )
    plan_stored_at = models.DateTimeField(
        null=True,
        blank=True,
        default=timezone.now,  # a run is stored with its plan unless start_plan says not
        help_text="When its last answer row was stored. Empty while the process that planned "
        "it is still storing them (beside its first calls): it is never judged or reported "
        "before, and is closed if that process stops first.",
    )

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.id

    @property
    def suite(self) -> Suite:
        return self.suite_version.suite

    @property
    def baseline(self) -> str:
        return self.contestants[0]

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def plan_whole(self) -> bool:
        """Is every answer of its plan stored (runs.planning.planner.start_plan)?"""
        return self.plan_stored_at is not None

    @property
    def planned_answers(self) -> int:
        """How many answers its plan has, from its estimate: stored or not (plan_whole)."""
        return sum(line["calls"] for line in (self.estimate or {}).get("contestants", []))

    # What an active run is doing, by status: the words every page's status badge shows.
    PHASE_LABELS: dict[str, str] = {
        Status.QUEUED: "Queued",
        Status.RUNNING: "Answering",
        Status.JUDGING: "Judging",
        Status.REPORTING: "Writing the report",
    }

    @property
    def status_label(self) -> str:
        """The status badge's text on every page: the phase an active run is in
        ("Answering", "Judging", …; "Cancelling" once asked to stop), else the final status.
        Read from the row as loaded: a page that shows a live run refreshes the row."""
        if self.is_active and self.cancel_requested:
            return "Cancelling"
        return self.PHASE_LABELS.get(self.status) or self.get_status_display()

    # --- what a run is called wherever it is listed or picked ----------------------------

    # An id starts with its run's start time (YYYYMMDDTHHMMSSZ): its first 8 characters are
    # the day, the same for every run of a day; the first 16 tell runs apart, and are an id
    # prefix every command takes as a reference when no other run starts alike.
    SHORT_ID = 16

    @property
    def short_id(self) -> str:
        """The start of the id that tells runs apart on a page: its start time."""
        return self.id[: self.SHORT_ID]

    @property
    def display_name(self) -> str:
        """What a member calls the run: its label, else its short id."""
        return self.label or self.short_id

    @property
    def age(self) -> str:
        """How long ago the run started, in one unit ("just now", "5 min ago", "3 h ago")."""
        seconds = max(0, int((timezone.now() - self.created_at).total_seconds()))
        for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
            if seconds >= size:
                return f"{seconds // size} {unit} ago"
        return "just now"

    @property
    def cost_text(self) -> str:
        """The run's spend as recorded on it, marked when the calls were simulated."""
        from evalsite.core.report.numbers import money  # the report package, lazily

        return money(float(self.spent_usd), digits=4) + (" (simulated)" if self.simulated else "")

    @property
    def headline(self) -> str:
        """The run's headline on one line, as `evalsite list` and every page show it: the
        measured (:func:`~evalsite.core.report.measured.measured`, as the run page's card
        leads with it), or what state a run without a report is in.

        A done run's report never changes again (it is written before the run is marked
        done), so its headline is worked out once a process: a list of runs then reads no
        report, which on a 100,000-pair run is megabytes of JSON."""
        if self.status != Run.Status.DONE:
            return self._headline()
        return _HEADLINES.get((self.pk, self.finished_at), self._headline)

    @property
    def headline_kept(self) -> bool:
        """Whether this process has kept the run's headline (a done run's, once read)."""
        return self.status == Run.Status.DONE and (self.pk, self.finished_at) in _HEADLINES

    def _headline(self) -> str:
        if self.report:
            from evalsite.core.report.measured import measured  # lazily, as above

            return measured(self.report).text
        if self.is_active:
            return "no report yet"
        return f"no report: {self.detail or self.status}"

    @property
    def display_line(self) -> str:
        """The run on one line, for pickers: name, suite, contestants, headline, cost, age."""
        return " · ".join(
            (self.display_name, self.suite.name, " vs ".join(self.contestants),
             self.headline, self.cost_text, self.age)
        )  # fmt: skip

    def rename(self, label: str) -> None:
        """Give the run `label` ("" takes it away), by the rule every door that sets a label
        follows (:func:`label_problem`); ValueError says why a label cannot name it."""
        label = label.strip()
        if label and (problem := label_problem(label)):
            raise ValueError(problem)
        self.label = label
        self.save(update_fields=["label"])

    @property
    def judge_config(self) -> dict[str, str] | None:
        """The judge configuration this run's verdicts, and so its kappa, measure (a run
        from before configurations were recorded says "unknown")."""
        model = self.judge.get("model")
        if not model:
            return None
        return {
            "model": model,
            "prompt": self.judge.get("prompt", "unknown"),
            "rubric": self.judge.get("rubric", "unknown"),
        }

    @property
    def stored_options(self) -> StoredOptions:
        return StoredOptions.from_json(self.options)

    @property
    def simulated(self) -> bool:
        return self.stored_options.fake

    @property
    def exit_code(self) -> ExitCode:
        """What a command that ran this run exits with (SPEC §15): 0 done; 1 when one of its
        report's gates failed (`on_below_floor: fail` is one of them); 3 failed or
        cancelled; 4 refused; 5 aborted over budget."""
        codes: dict[str, ExitCode] = {
            Run.Status.DONE: ExitCode.OK,
            Run.Status.REFUSED: ExitCode.REFUSED,
            Run.Status.ABORTED_OVER_BUDGET: ExitCode.ABORTED_OVER_BUDGET,
        }
        code = codes.get(self.status, ExitCode.RUNTIME_ERROR)
        if code != ExitCode.OK or self.report is None:
            return code
        if not self.report.get("gates_passed", True):
            return ExitCode.GATE_FAILED
        return code

    @property
    def stored_report(self) -> dict[str, Any]:
        """The run's report; :class:`Run.NoReport` when it has none (yet, or ever)."""
        if self.report is None:
            raise Run.NoReport(self)
        return self.report

    @property
    def spent_usd(self) -> Decimal:
        return self.spent_answers_usd + self.spent_judge_usd

    @property
    def report_dir(self) -> Path:
        return Path(settings.REPORTS_DIR) / self.suite_version.suite.name / self.id

    # --- state changes: each one conditional, so concurrent shards agree -----------------

    def mark_running(self) -> None:
        now = timezone.now()
        Run.objects.filter(pk=self.pk, status=Run.Status.QUEUED).update(
            status=Run.Status.RUNNING, started_at=now, phase_at=now
        )
        self.refresh_from_db(fields=["status", "started_at"])

    def advance(self, current: str, new: str) -> bool:
        """Move from `current` to `new` only if no one else has; True for the one who did."""
        changed = Run.objects.filter(pk=self.pk, status=current).update(
            status=new, phase_at=timezone.now()
        )
        self.refresh_from_db(fields=["status", "phase_at"])
        return changed == 1

    def finish(self, status: str, detail: str = "") -> bool:
        """Move an active run to a final status once; False if another shard did first."""
        changed = Run.objects.filter(pk=self.pk, status__in=self.ACTIVE).update(
            status=status, detail=detail, finished_at=timezone.now()
        )
        self.refresh_from_db()
        return changed == 1

    def mark_plan_whole(self) -> None:
        """Its last answers are stored (runs.planning.planner.PlanRest): it may move on."""
        self.plan_stored_at = timezone.now()
        Run.objects.filter(pk=self.pk).update(plan_stored_at=self.plan_stored_at)

    def fail_unstored_plan(self, why: str) -> bool:
        """Fail an active run whose plan was not stored whole (runs.planning.planner.
        start_plan), saying how much was, `why`, and what to do; False if it had ended."""
        stored = self.answers.count()
        again = (
            "run the suite again"
            if self.no_look  # its answers were never cached
            else "run the suite again (without --no-cache it takes the answers this run "
            "finished from the cache)"
        )
        return self.finish(
            Run.Status.FAILED,
            f"its plan was not stored whole ({stored} of its answers were stored; {why}); "
            f"nothing more is asked for it: {again}",
        )

    def answer_again(self) -> None:
        """Back to answering from judging or reporting, its pairs and judge calls deleted
        (their reservations returned; what the judge cost stays spent): a resumed no-look
        run, whose answers' texts died with the process that judged them."""
        with transaction.atomic():
            claimed = self.judgements.filter(status="claimed")
            held = claimed.aggregate(total=models.Sum("reserved_usd"))["total"]
            self.judgements.all().delete()
            self.pairs.all().delete()
            if held:
                self.settle(held, None, None, judge=True)
            Run.objects.filter(pk=self.pk, status__in=self.ACTIVE).update(
                status=Run.Status.RUNNING, phase_at=timezone.now()
            )
        self.refresh_from_db(fields=["status", "phase_at"])

    def request_cancel(self) -> bool:
        """Ask the shards to stop between calls; False if the run had already ended."""
        changed = Run.objects.filter(pk=self.pk, status__in=self.ACTIVE).update(
            cancel_requested=True
        )
        self.refresh_from_db(fields=["cancel_requested"])
        return changed == 1

    def stop_models(self, models: set[str]) -> None:
        """Record that `models` refused a call (auth, bad request), so no shard calls them
        again in this run. Read, merged and written under the row's lock (the caller's
        transaction: IMMEDIATE on SQLite, the row lock on PostgreSQL)."""
        current = Run.objects.select_for_update().values_list("stopped_models", flat=True)
        known = set(current.get(pk=self.pk))
        if not models <= known:
            self.stopped_models = sorted(known | models)
            Run.objects.filter(pk=self.pk).update(stopped_models=self.stopped_models)

    # --- spend: a reservation, not a check (SPEC §6.4) -----------------------------------

    def reserve(self, amount: Decimal) -> bool:
        """Reserve `amount` against the cap in one conditional UPDATE; False if it won't fit
        or the run is no longer active (after an overrun nothing new is reserved).

        Integer arithmetic in nano-USD, so a reservation that exactly fills the cap fits.
        The cap is the one the run was planned with (it never changes afterwards). An amount
        above the whole cap never fits, and is never sent to the database, where one past
        its integers' range (a call stored asking for 10^20 tokens) would not even compare.
        """
        nano, cap = to_nano(amount), to_nano(self.cap_usd)
        if nano > cap:
            return False
        # Written as SQL: a shard reserves once a claimed batch, and building this UPDATE
        # with the ORM cost several times what the database spent on it.
        with connection.cursor() as cursor:
            cursor.execute(_reserve_sql(), [nano, self.pk, *self.ACTIVE, nano, cap])
            return cursor.rowcount == 1

    def settle(
        self, reserved: Decimal, spent: Decimal | None, uncached: Decimal | None, *, judge: bool
    ) -> None:
        """Release a reservation and record what the call cost (None: unknown usage).

        The cost is recorded as reported even when it is above the reservation: what was
        billed was billed. The runner stops the run when that happens.
        """
        spent_field = "spent_judge_usd" if judge else "spent_answers_usd"
        changes = {}
        if reserved:
            changes["reserved_usd"] = F("reserved_usd") - to_nano(reserved)
        if spent:
            changes[spent_field] = F(spent_field) + to_nano(spent)
        if uncached:
            changes["uncached_usd"] = F("uncached_usd") + to_nano(uncached)
        if changes:
            Run.objects.filter(pk=self.pk).update(**changes)


# Done runs' headlines in this process (Run.headline), by run id and when it finished.
_HEADLINES: Kept[tuple[str, dt.datetime | None], str] = Kept(1024, settle=False)


class _WithHeadlines(ModelIterable):
    """Runs, each with its report when its headline is not kept (RunQuerySet.named)."""

    def __iter__(self):
        runs = list(super().__iter__())
        wanted = [run.pk for run in runs if not run.headline_kept]
        reports = dict(Run.objects.filter(pk__in=wanted).values_list("pk", "report"))
        for run in runs:
            if run.pk in reports:
                run.report = reports[run.pk]
        yield from runs
