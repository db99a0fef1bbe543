"""The decision log: what the team decided after reading a run, and why."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from runs.models.run import Run


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

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.run_id}: {self.get_verdict_display()}"
