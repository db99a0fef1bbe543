"""Answers (one per run, task, case, contestant and repeat) and the shared response cache."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from decimal import Decimal
from typing import Any, ClassVar

from django.db import connections, models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Avg, Case, Exists, F, IntegerField, OuterRef, Q, Value, When
from django.db.models.functions import Length, Now
from django.utils import timezone

from evalsite.core.patterns import PatternError, search
from evalsite.core.scoring.aggregate import answer_passed
from runs.models.rows import column_name, update_each
from runs.models.run import MoneyField, Run, lease_expiry


class CallQuerySet[C: Call](models.QuerySet[C]):
    """The calls of a run as the engine sees them: claimed by a shard's token, finished or
    given back by it, reclaimed from a dead one. Every change is conditional on the claim,
    so two shards never both finish one call, and a shard that lost its claim (its lease
    ran out and another shard reclaimed the row) changes nothing."""

    def pending(self):
        return self.filter(status=Call.Status.PENDING)

    def finished(self):
        return self.filter(status__in=Call.FINISHED)

    def unfinished(self):
        return self.filter(status__in=[Call.Status.PENDING, Call.Status.CLAIMED])

    def claim(self, token: str, limit: int) -> list[C]:
        """Up to `limit` pending calls claimed for `token`, in id order; none once the run is
        no longer active. One conditional ``UPDATE … RETURNING``: shards never share a row.
        Each call is built from the columns it returns, its model's :attr:`Call.CLAIM_FIELDS`
        (the rest deferred, read from the row if ever asked for).

        Written as SQL: a shard claims a batch of a few dozen calls hundreds of times a run,
        and selecting their ids, updating them and reading the rows back through the ORM
        (three statements) was a quarter of a fast run (docs/performance.md)."""
        if limit <= 0:
            return []
        model, connection = self.model, connections[self.db]
        pending = self.pending().order_by().values("pk")[:limit]
        compiler = pending.query.get_compiler(self.db)
        inner, inner_params = compiler.as_sql()
        now, now_params = compiler.compile(Now())  # the database's clock: see reclaim_expired
        fields = [f for f in model._meta.concrete_fields if f.name in model.CLAIM_FIELDS]
        pending_status = Call.Status.PENDING.value
        params = [
            Call.Status.CLAIMED.value, token, *now_params, *inner_params, pending_status,
            *Run.ACTIVE,
        ]  # fmt: skip
        with connection.cursor() as cursor:
            cursor.execute(_claim_sql(model, connection, now, inner, fields), params)
            rows = cursor.fetchall()
        converters = compiler.get_converters([f.get_col(model._meta.db_table) for f in fields])
        if converters:
            rows = list(compiler.apply_converters(rows, converters))
        names = frozenset(f.attname for f in fields)  # from_db asks each field "in names"
        db = self.db
        calls = [model.from_db(db, names, row) for row in rows]
        return sorted(calls, key=lambda call: call.pk)

    def note_reserved(self, reserved: dict[int, Decimal]) -> None:
        """Note on each claimed call what is reserved for it, so a reclaim can return it:
        one prepared UPDATE a call (update_each). Prompts of different lengths reserve
        different amounts, so an ORM UPDATE per distinct amount was one a call anyway."""
        changes = {pk: {"reserved_usd": amount} for pk, amount in reserved.items()}
        update_each(self.model, changes, using=self.db)

    def claimed_as(self, token: str, call: Call):
        """`call` while it is still claimed by `token` in the claim that read it: the same
        attempt. Another shard may give back a claim that outlived its lease, and the shard
        that held it claim that call again in its next batch, under the same token; the
        older claim's attempt still in flight must then count as taken over."""
        return self.filter(
            pk=call.pk, claimed_by=token, status=Call.Status.CLAIMED, attempts=call.attempts
        )

    def give_back(
        self, run: Run, token: str, *, judge: bool, attempts: Mapping[int, int] | None = None
    ) -> set[int]:
        """This queryset's calls still claimed by `token` (and, given their `attempts` by id,
        in those claims: :meth:`claimed_as`) back to pending, their reservations returned
        to the run; the ids given back."""
        with transaction.atomic(using=self.db):
            mine = self.filter(claimed_by=token, status=Call.Status.CLAIMED)
            held = mine.select_for_update().values_list("pk", "attempts", "reserved_usd")
            rows = {
                pk: reserved
                for pk, attempt, reserved in held
                if attempts is None or attempts[pk] == attempt
            }
            if rows:
                self.filter(pk__in=rows).update(
                    status=Call.Status.PENDING, claimed_by="", reserved_usd=0
                )
                run.settle(sum(rows.values(), Decimal(0)), None, None, judge=judge)
        return set(rows)

    def reclaim_expired(self, run: Run, lease_s: float, *, judge: bool, sparing: str = "") -> int:
        """Claims older than the lease (their shard died) back to pending, with the
        reservations they held, except the token `sparing`'s (the looking shard's own, alive);
        how many. Each row is taken from its own token, so a claim renewed meanwhile is left
        alone.

        Claims are stamped and aged by the database's clock, never a worker's: a worker
        whose clock runs ahead by more than the lease would otherwise take live claims
        from the others, and their calls would be made and paid twice."""
        expired = lease_expiry(lease_s)
        stale = self.filter(status=Call.Status.CLAIMED, claimed_at__lt=expired)
        tokens = set(stale.values_list("claimed_by", flat=True)) - {sparing}
        return sum(
            len(stale.filter(claimed_by=token).give_back(run, token, judge=judge))
            for token in tokens
        )

    def ask_again(self, run: Run) -> int:
        """This queryset's claimed and finished answers back to pending, as never asked: a
        resumed no-look run whose replies died with the process that held them. What they
        cost stays spent on the run (it was billed); claims' reservations are returned."""
        with transaction.atomic(using=self.db):
            claimed = self.filter(status=Call.Status.CLAIMED)
            held = claimed.aggregate(total=models.Sum("reserved_usd"))["total"]
            count = self.exclude(status=Call.Status.PENDING).update(
                **dict.fromkeys(_REPLY_FIELDS), **_ASKED_AGAIN
            )
            if held:
                run.settle(held, None, None, judge=False)
        return count

    def finish_claimed(
        self, token: str, changes: dict[int, dict[str, Any]], attempts: Mapping[int, int]
    ) -> set[int]:
        """Write each call's `changes` (its result) while `token` still holds the claim of
        that call's attempt (by id, in `attempts`: :meth:`claimed_as`); the ids written. A
        call whose claim was lost keeps what its reclaimer gave it."""
        guard = {"claimed_by": token, "status": Call.Status.CLAIMED}
        each = {pk: {"attempts": attempts[pk]} for pk in changes}
        done = {"claimed_by": "", "reserved_usd": Decimal(0), "finished_at": timezone.now()}
        changes = {pk: done | values for pk, values in changes.items()}
        return update_each(self.model, changes, guard, each_guard=each, using=self.db)


def _claim_sql(
    model: type[Call],
    connection: BaseDatabaseWrapper,
    now: str,
    pending: str,
    fields: list[models.Field],
) -> str:
    """CallQuerySet.claim's statement: the same conditional UPDATE as ``filter(Exists(active
    run), pk__in=pending ids, status=pending).update(status=claimed, claimed_by=token,
    claimed_at=Now(), attempts=F("attempts") + 1)``, with the ids' SELECT (`pending`) as
    its subquery and the claimed `fields` returned. Parameters: the claimed status, the
    token, `now`'s, `pending`'s, the pending status and the run's active statuses."""
    quote = connection.ops.quote_name
    table, runs = quote(model._meta.db_table), quote(Run._meta.db_table)

    def col(name: str) -> str:
        return quote(column_name(model, name))

    statuses = ", ".join(["%s"] * len(Run.ACTIVE))
    run_id, run_status = quote(column_name(Run, "pk")), quote(column_name(Run, "status"))
    returning = ", ".join(quote(column_name(model, f.name)) for f in fields)
    # Table and column names from the models' own fields, quoted; values are parameters.
    return (
        f"UPDATE {table} SET {col('status')} = %s, {col('claimed_by')} = %s, "  # noqa: S608
        f"{col('claimed_at')} = {now}, {col('attempts')} = {col('attempts')} + 1 "
        f"WHERE {col('pk')} IN ({pending}) AND {col('status')} = %s "
        f"AND EXISTS (SELECT 1 FROM {runs} WHERE {runs}.{run_id} = {table}.{col('run')} "
        f"AND {runs}.{run_status} IN ({statuses})) "
        f"RETURNING {returning}"
    )


# What ask_again clears: an answer's reply, its costs and its scores (None), and the rest.
_REPLY_FIELDS = (
    "input_tokens", "output_tokens", "cached_input_tokens", "cost_usd", "cost_if_uncached_usd",
    "latency_ms", "finished_at", "claimed_at", "parsed_json", "checks", "checks_passed",
    "exec_check", "passed", "scored_at", "grade_score", "grade_passed", "match_score",
    "match_passed", "match_detail",
)  # fmt: skip
_ASKED_AGAIN = {
    "status": "pending", "claimed_by": "", "reserved_usd": Decimal(0), "text": "",
    "finish_reason": "", "schema_mode": "", "cached": False, "error_kind": "",
    "error_message": "", "schema_verdict": "", "schema_error": "", "exec_verdict": "",
}  # fmt: skip


class Call(models.Model):
    """One provider call of a run, as a row the engine claims, reserves for and finishes.

    Answers and judge calls are both calls: created up front as pending, so the plan is a
    set of rows, progress is a count, and resuming is doing what is pending.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        CLAIMED = "claimed"
        DONE = "done"
        ERROR = "error"

    FINISHED = (Status.DONE, Status.ERROR)
    # What a claim reads back of each call it claims (CallQuerySet.claim): what the engine
    # reads of a claimed call, and what the claim itself set.
    CLAIM_FIELDS: ClassVar[frozenset[str]] = frozenset({
        "id", "run", "task_id", "case_id", "repeat", "status", "claimed_by", "claimed_at",
        "attempts", "request", "request_hash",
    })  # fmt: skip

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="%(class)ss")
    task_id = models.CharField(max_length=64)
    case_id = models.CharField(max_length=64)
    repeat = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    claimed_by = models.CharField(max_length=64, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    reserved_usd = MoneyField(default=Decimal(0), help_text="Held against the cap for its call.")
    request = models.JSONField(help_text="The rendered messages and params.")
    request_hash = models.CharField(max_length=64)
    text = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=64, blank=True)
    schema_mode = models.CharField(max_length=10, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cached_input_tokens = models.PositiveIntegerField(null=True, blank=True)
    # Summed with Sum() in reports and progress: whole nano-USD in the database.
    cost_usd = MoneyField(null=True, blank=True)
    cost_if_uncached_usd = MoneyField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    cached = models.BooleanField(default=False)
    error_kind = models.CharField(max_length=20, blank=True)
    error_message = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = CallQuerySet.as_manager()

    class Meta:
        abstract = True

    @property
    def model(self) -> str:
        raise NotImplementedError

    @property
    def is_judge_call(self) -> bool:
        return False


class AnswerQuerySet(CallQuerySet["Answer"]):
    """The answers as the answers browser (and its CSV) filters and orders them."""

    def failures(self) -> AnswerQuerySet:
        """Answers that failed their scoring, or whose call ended in an error."""
        return self.filter(Q(passed=False) | Q(status=Answer.Status.ERROR))

    def differing(self) -> AnswerQuerySet:
        """Answers of the attempts (task, case, repeat) where the contestants' verdicts
        differ: one passed where another failed, errored or is not scored."""
        others = (
            Answer.objects.filter(
                run=OuterRef("run"), task_id=OuterRef("task_id"),
                case_id=OuterRef("case_id"), repeat=OuterRef("repeat"),
            )
            .annotate(verdict_code=VERDICT_CODE)
            .exclude(verdict_code=OuterRef("verdict_code"))
        )  # fmt: skip
        return self.annotate(verdict_code=VERDICT_CODE).filter(Exists(others))

    def containing(self, text: str) -> AnswerQuerySet:
        """Answers whose text (or error) holds `text`, ignoring case."""
        return self.filter(Q(text__icontains=text) | Q(error_message__icontains=text))

    def matching(self, pattern: str) -> AnswerQuerySet:
        """Answers whose text (or error) `pattern` is found in, matched by RE2 in time
        linear in the text (:mod:`evalsite.core.patterns`: a member's pattern is untrusted);
        PatternError says why it cannot be used, or that it matches too many to list."""
        search(pattern, "")  # a pattern RE2 cannot compile is refused before any row is read
        rows = self.order_by().values_list("pk", "text", "error_message")
        found = [
            pk
            for pk, text, error in rows.iterator(chunk_size=2000)
            if search(pattern, text) or (error and search(pattern, error))
        ]
        if len(found) > MAX_PATTERN_MATCHES:
            raise PatternError(
                f"the pattern matches more than {MAX_PATTERN_MATCHES:,} answers: narrow it, "
                "or filter by task, contestant or verdict first"
            )
        return self.filter(pk__in=found)

    def in_order(self, key: str) -> AnswerQuerySet:
        """Ordered by one of :data:`ANSWER_ORDERS` (``-`` first for the largest first), the
        rows without the figure last; plan order for any other key."""
        field = ANSWER_ORDERS.get(key.removeprefix("-"))
        if field is None:
            return self.order_by("pk")
        descending = key.startswith("-")
        ordered = self.annotate(length=Length("text")) if field[0] == "length" else self
        keys = [F(name).desc(nulls_last=True) if descending else F(name).asc(nulls_last=True)
                for name in field]  # fmt: skip
        return ordered.order_by(*keys, "pk")


# The most answers a pattern may pick out (their ids go to the database in one query).
MAX_PATTERN_MATCHES = 10_000
# An answer's verdict as one number, so two contestants' verdicts compare in SQL.
VERDICT_CODE = Case(
    When(status=Call.Status.ERROR, then=Value(-2)),
    When(passed=True, then=Value(1)),
    When(passed=False, then=Value(0)),
    default=Value(-1),
    output_field=IntegerField(),
)
# What the answers browser sorts by: the fields each order reads, in turn.
ANSWER_ORDERS = {
    "score": ("passed", "match_score", "grade_score"),
    "cost": ("cost_usd",),
    "latency": ("latency_ms",),
    "length": ("length",),
}


class Answer(Call):
    """One per run, task, case, contestant and repeat; the unique constraint makes
    duplicates impossible."""

    contestant = models.CharField(max_length=300)
    # Scoring (SPEC §7), filled after the answer is done; execution checks are never cached.
    schema_verdict = models.CharField(max_length=16, blank=True)
    schema_error = models.TextField(blank=True)
    parsed_json = models.JSONField(null=True, blank=True)
    checks = models.JSONField(null=True, blank=True)
    checks_passed = models.BooleanField(null=True)
    exec_check = models.JSONField(null=True, blank=True)
    exec_verdict = models.CharField(max_length=8, blank=True)
    passed = models.BooleanField(null=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    # Single-answer judge scoring (SPEC §7.6), for tasks with `grade:`.
    grade_score = models.PositiveSmallIntegerField(null=True, blank=True)
    grade_passed = models.BooleanField(null=True)
    # Weighted match (docs/checks.md), for tasks with `weighted_match:`: the 0-1 score, its
    # pass at the task's threshold, and the per-field scores with any note.
    match_score = models.FloatField(null=True, blank=True)
    match_passed = models.BooleanField(null=True)
    match_detail = models.JSONField(null=True, blank=True)

    # django-stubs types the abstract Call's manager as a class variable and each manager
    # made by as_manager() as an instance one, so an override of it is refused (a known
    # limit of the plugin); the AnswerQuerySet is a CallQuerySet, so Call's callers hold.
    objects = AnswerQuerySet.as_manager()  # type: ignore[misc]
    CLAIM_FIELDS = Call.CLAIM_FIELDS | {"contestant"}

    class Meta:
        ordering = ["task_id", "case_id", "repeat", "contestant"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "task_id", "case_id", "contestant", "repeat"], name="one_answer"
            )
        ]
        indexes = [models.Index(fields=["run", "status"], name="answer_run_status")]

    def __str__(self) -> str:
        return f"{self.run_id} {self.task_id}/{self.case_id} {self.contestant} #{self.repeat}"

    @property
    def model(self) -> str:
        return self.contestant.partition("@")[0]

    def take_grade(self, score: int, passed: bool) -> None:
        """The judge's grade of this (graded) answer, and with it the attempt's pass, by the
        one rule (:func:`~evalsite.core.scoring.aggregate.answer_passed`): a failed grade
        fails the attempt. An answer not scored yet gets its pass when it is scored."""
        self.grade_score, self.grade_passed = score, passed
        if self.scored_at is not None:
            self.passed = answer_passed(
                self.schema_verdict,
                self.checks_passed,
                self.exec_verdict,
                self.match_passed,
                graded=True,
                grade=passed,
            )


type HistoryKey = tuple[str, str, str]  # a provider, a model and a task id


class CachedResponseQuerySet(models.QuerySet["CachedResponse"]):
    def mean_output_tokens(self, keys: Collection[HistoryKey]) -> dict[HistoryKey, float | None]:
        """What each (provider, model, task) of `keys` has answered before, for the
        pre-flight estimate: the mean output tokens of its cached responses, None where it
        has none. One query for them all: a plan asks for every contestant and task."""
        if not keys:
            return {}
        rows = self.filter(
            provider__in={provider for provider, _, _ in keys},
            model__in={model for _, model, _ in keys},
            task_id__in={task_id for _, _, task_id in keys},
        )
        means = rows.values_list("provider", "model", "task_id").annotate(Avg("output_tokens"))
        found = {(provider, model, task): mean for provider, model, task, mean in means.order_by()}
        return {key: found.get(key) for key in keys}


class CachedResponse(models.Model):
    """A completion by request hash, shared by every run, user and worker."""

    request_hash = models.CharField(max_length=64, unique=True)
    provider = models.CharField(max_length=64)
    model = models.CharField(max_length=300)
    task_id = models.CharField(max_length=64, blank=True)
    text = models.TextField()
    finish_reason = models.CharField(max_length=64, blank=True)
    schema_mode = models.CharField(max_length=10, blank=True)
    provider_model = models.CharField(max_length=300, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cached_input_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = CachedResponseQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["provider", "model", "task_id"], name="cache_history")]

    def __str__(self) -> str:
        return f"{self.model} {self.request_hash[:12]}"
