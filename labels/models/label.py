"""The labelling queue's own rows: which pair a member was shown or skipped. (The labels
themselves are :class:`runs.models.Label`: a run's report reads them.)"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from runs.models import Suite
from runs.models.label import CONTENT_FIELDS


class Assignment(models.Model):
    """A pair shown to a member in the queue, or skipped by them: it keeps two members from
    being handed the same pair at once, and a skipped pair from coming back."""

    class State(models.TextChoices):
        SHOWN = "shown"
        SKIPPED = "skipped"

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="+")
    labeller = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    task_id = models.CharField(max_length=64)
    case_id = models.CharField(max_length=64)
    baseline = models.CharField(max_length=300)
    candidate = models.CharField(max_length=300)
    baseline_sha = models.CharField(max_length=64)
    candidate_sha = models.CharField(max_length=64)
    state = models.CharField(max_length=8, choices=State.choices, default=State.SHOWN)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["labeller", "suite", *CONTENT_FIELDS],
                name="one_assignment_per_labeller_and_pair",
            )
        ]

    def __str__(self) -> str:
        return f"{self.labeller_id}: {self.task_id}/{self.case_id} {self.state}"
