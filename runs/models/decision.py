"""The decision log: what the team decided after reading a run, and why."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from runs.models.run import Run

# The same decision sent again within this long (a reload that resends the POST, a fresh
# form filled the same way after one) is the one already stored.
RESENT_WITHIN = dt.timedelta(minutes=10)


class DecisionQuerySet(models.QuerySet["Decision"]):
    def record(
        self, run: Run, user, verdict: str, reasoning: str, *, since: dt.datetime | None = None
    ) -> tuple[Decision, bool]:
        """Store ``user``'s decision on ``run``, or return the same one (same verdict, same
        words, same member) stored within :data:`RESENT_WITHIN` or since ``since`` (when the
        form was issued): a resent or re-filled form stores one row. True when stored now."""
        cutoff = timezone.now() - RESENT_WITHIN
        cutoff = min(cutoff, since) if since is not None else cutoff
        with transaction.atomic():  # SQLite: IMMEDIATE; PostgreSQL: the lock on the run row
            Run.objects.select_for_update(no_key=True).filter(pk=run.pk).first()
            same = self.filter(run=run, decided_by=user, verdict=verdict, reasoning=reasoning)
            earlier = same.filter(created_at__gte=cutoff).first()
            if earlier is not None:
                return earlier, False
            decision = self.create(run=run, decided_by=user, verdict=verdict, reasoning=reasoning)
        return decision, True


class Decision(models.Model):
    class Verdict(models.TextChoices):
        ADOPT = "adopt", "adopt"
        KEEP = "keep", "keep"
        MORE_EVIDENCE = "needs_more_evidence", "needs more evidence"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="decisions")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    verdict = models.CharField(max_length=24, choices=Verdict.choices)
    reasoning = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    objects = DecisionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.run_id}: {self.get_verdict_display()}"
