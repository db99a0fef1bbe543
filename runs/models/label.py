"""Human preference labels (SPEC §10): who preferred which answer of a pair, and why.

A run's calibration reads them when its report is written, so they live in ``runs``: the
``labels`` app, where members give and import them, imports this one and never the
reverse. The table keeps the name it was created with, ``labels_label``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from runs.models.suites import Suite

# The pair content key, what a content label is bound to (SPEC §10.1): the case, the two
# contestants and the sha256 of each answer, in this order. A Label and the queue's
# Assignment hold it under CONTENT_FIELDS; a Pair under PAIR_CONTENT_FIELDS (Pair.content
# gives it under the first names). Every content key in the code is made from these.
CONTENT_FIELDS = ("task_id", "case_id", "baseline", "candidate", "baseline_sha", "candidate_sha")
PAIR_CONTENT_FIELDS = (
    "task_id", "case_id", "baseline_contestant", "candidate_contestant", "baseline_sha",
    "candidate_sha",
)  # fmt: skip


def content_of(row: Any) -> dict[str, Any]:
    """The content key of a label or an assignment (or a pair's ``content``), by field name:
    to find or make the other rows about the same content."""
    return {name: getattr(row, name) for name in CONTENT_FIELDS}


class LabelQuerySet(models.QuerySet["Label"]):
    def for_suite(self, suite: Suite) -> LabelQuerySet:
        return self.filter(suite=suite)

    def give(
        self,
        suite: Suite,
        labeller: Any,
        content: dict[str, Any],
        values: dict[str, Any],
        picked: dict[str, Any],
        *,
        repick: bool = False,
    ) -> Label:
        """`labeller`'s label of a pair's `content`, made or changed: its `values` (choice,
        note, source) and, when it is made, `picked` (the queue it is given in, and that
        queue's probability). A label changed later keeps how its pair was picked: changing
        one's mind does not change it. `repick`: it does, for a label a file made changed
        by a file again (the file is where the label came from)."""
        label, _ = self.update_or_create(
            suite=suite,
            labeller_name=labeller.get_username(),
            **content,
            defaults=values | picked if repick else values,
            create_defaults=values | picked,
        )
        return label


class Label(models.Model):
    """A preference bound to a pair's content: task, case, the two contestants and the
    sha256 of each answer text (the pair content key), so identical answers of a later run
    carry the label with them and changed answers make it stale."""

    class Prefer(models.TextChoices):
        BASELINE = "baseline"
        CANDIDATE = "candidate"
        TIE = "tie"

    class Source(models.TextChoices):
        BROWSER = "browser"
        IMPORT = "import"

    class Mode(models.TextChoices):
        SAMPLE = "sample", "sample (counts toward the headline kappa)"
        TARGETED = "targeted", "targeted review (kept out of the headline kappa)"

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="labels")
    labeller = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    labeller_name = models.CharField(max_length=150, help_text="Kept if the user is deleted.")
    task_id = models.CharField(max_length=64)
    case_id = models.CharField(max_length=64)
    baseline = models.CharField(max_length=300)
    candidate = models.CharField(max_length=300)
    baseline_sha = models.CharField(max_length=64)
    candidate_sha = models.CharField(max_length=64)
    prefer = models.CharField(max_length=10, choices=Prefer.choices)
    note = models.TextField(blank=True)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.BROWSER)
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.SAMPLE)
    probability = models.FloatField(
        null=True,
        blank=True,
        help_text=(
            "The chance the sample queue gave this pair of being asked (0 to 1, from the "
            "judge's uncertainty: docs/judging.md); empty for a label given before the queue "
            "sampled by uncertainty, or imported without one: it counts as 1."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = LabelQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["labeller_name", "suite", *CONTENT_FIELDS],
                name="one_label_per_labeller_and_pair",
            )
        ]
        indexes = [models.Index(fields=["suite", "task_id", "case_id"], name="label_lookup")]
        db_table = "labels_label"

    def __str__(self) -> str:
        return f"{self.labeller_name}: {self.task_id}/{self.case_id} {self.prefer}"
