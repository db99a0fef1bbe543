"""Answers (one per run, task, case, contestant and repeat) and the shared response cache."""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.db.models import Avg

from runs.models.run import MoneyField, Run


class CallQuerySet(models.QuerySet):
    def pending(self):
        return self.filter(status=Call.Status.PENDING)

    def finished(self):
        return self.filter(status__in=Call.FINISHED)

    def unfinished(self):
        return self.filter(status__in=[Call.Status.PENDING, Call.Status.CLAIMED])


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


class CachedResponseQuerySet(models.QuerySet):
    def mean_output_tokens(self, provider: str, model: str, task_id: str) -> float | None:
        """What this model has answered on this task before, for the pre-flight estimate."""
        rows = self.filter(provider=provider, model=model, task_id=task_id)
        return rows.aggregate(mean=Avg("output_tokens"))["mean"]


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
