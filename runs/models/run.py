"""A run: a suite version answered by contestants, priced from one table."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import models
from django.db.models import F
from django.utils import timezone

from evalsite.core.exitcodes import ExitCode
from runs.models.pricing import PriceTable
from runs.models.suites import Suite, SuiteVersion


class RunQuerySet(models.QuerySet):
    def for_suite(self, suite: Suite) -> RunQuerySet:
        return self.filter(suite_version__suite=suite)

    def active(self) -> RunQuerySet:
        return self.filter(status__in=Run.ACTIVE)

    def finished(self) -> RunQuerySet:
        return self.exclude(status__in=Run.ACTIVE)

    def latest_calibration(self) -> dict | None:
        """id, eligible, gate and reason of the latest run with a report, read from the
        stored report's keys only (not the whole report)."""
        return (
            self.filter(report__isnull=False)
            .order_by("-created_at")
            .values(
                "id",
                eligible=F("report__headline_eligible"),
                gate=F("report__calibration__status"),
                reason=F("report__calibration__reason"),
            )
            .first()
        )

    def resolve(self, reference: str) -> Run:
        """A run by id, unique id prefix, label (the latest run with it) or ``latest``.

        Run.DoesNotExist with a message saying what was tried, or naming the candidates
        when a prefix is ambiguous.
        """
        reference = reference.strip()
        if reference == "latest":
            run = self.order_by("-created_at").first()
            if run is None:
                raise Run.DoesNotExist("there are no runs yet")
            return run
        exact = self.filter(pk=reference).first()
        if exact is not None:
            return exact
        labelled = self.filter(label=reference).order_by("-created_at").first()
        if labelled is not None:
            return labelled
        matches = list(self.filter(pk__startswith=reference).values_list("pk", flat=True)[:6])
        if len(matches) == 1:
            return self.get(pk=matches[0])
        if matches:
            shown = ", ".join(matches[:5])
            raise Run.DoesNotExist(f"{reference!r} matches several runs: {shown}")
        raise Run.DoesNotExist(f"no run has the id, id prefix or label {reference!r}")

    def stalled(self, lease_s: float) -> RunQuerySet:
        """Active runs with work left and no claim younger than the lease: no shard is alive."""
        recent = timezone.now() - dt.timedelta(seconds=lease_s)
        answering = (
            self.filter(status=Run.Status.RUNNING, cancel_requested=False)
            .filter(answers__status__in=["pending", "claimed"])
            .exclude(answers__status="claimed", answers__claimed_at__gte=recent)
        )
        # Judging and reporting: nothing claimed or finished for a lease since the phase began.
        later = (
            self.filter(
                status__in=[Run.Status.JUDGING, Run.Status.REPORTING],
                cancel_requested=False,
                phase_at__lt=recent,
            )
            .exclude(judgements__claimed_at__gte=recent)
            .exclude(judgements__finished_at__gte=recent)
        )
        ids = set(answering.values_list("pk", flat=True)) | set(later.values_list("pk", flat=True))
        return self.filter(pk__in=ids)


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
    reserved_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    spent_answers_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    spent_judge_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    uncached_usd = models.DecimalField(max_digits=14, decimal_places=8, default=0)
    cost_incomplete = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    resumed_at = models.DateTimeField(null=True, blank=True)
    phase_at = models.DateTimeField(null=True, blank=True, help_text="When the status last moved.")
    report = models.JSONField(null=True, blank=True)

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
    def simulated(self) -> bool:
        return bool(self.options.get("fake"))

    @property
    def exit_code(self) -> ExitCode:
        """What a command that ran this run exits with (SPEC §15): 0 done; 1 when one of the
        suite's `gate:` checks failed, or the suite says `on_below_floor: fail` and the
        headline gate is not ok; 3 failed or cancelled; 4 refused; 5 aborted over budget."""
        code = {
            Run.Status.DONE: ExitCode.OK,
            Run.Status.REFUSED: ExitCode.REFUSED,
            Run.Status.ABORTED_OVER_BUDGET: ExitCode.ABORTED_OVER_BUDGET,
        }.get(self.status, ExitCode.RUNTIME_ERROR)
        if code != ExitCode.OK or self.report is None:
            return code
        judge = self.suite_version.parsed.get("judge") or {}
        fail_below = (judge.get("calibration") or {}).get("on_below_floor") == "fail"
        if fail_below and not self.report["headline_eligible"]:
            return ExitCode.GATE_FAILED
        if not self.report.get("gates_passed", True):
            return ExitCode.GATE_FAILED
        return code

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

    def request_cancel(self) -> bool:
        """Ask the shards to stop between calls; False if the run had already ended."""
        changed = Run.objects.filter(pk=self.pk, status__in=self.ACTIVE).update(
            cancel_requested=True
        )
        self.refresh_from_db(fields=["cancel_requested"])
        return changed == 1

    # --- spend: a reservation, not a check (SPEC §6.4) -----------------------------------

    def reserve(self, amount: Decimal) -> bool:
        """Reserve `amount` against the cap in one conditional UPDATE; False if it won't fit."""
        committed = F("reserved_usd") + F("spent_answers_usd") + F("spent_judge_usd")
        return (
            Run.objects.filter(pk=self.pk, cap_usd__gte=committed + amount).update(
                reserved_usd=F("reserved_usd") + amount
            )
            == 1
        )

    def settle(
        self, reserved: Decimal, spent: Decimal | None, uncached: Decimal | None, *, judge: bool
    ) -> None:
        """Release a reservation and record what the call cost (None: unknown usage)."""
        spent_field = "spent_judge_usd" if judge else "spent_answers_usd"
        changes = {"reserved_usd": F("reserved_usd") - reserved}
        if spent:
            changes[spent_field] = F(spent_field) + spent
        if uncached:
            changes["uncached_usd"] = F("uncached_usd") + uncached
        Run.objects.filter(pk=self.pk).update(**changes)
