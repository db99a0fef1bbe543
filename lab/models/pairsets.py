"""The judge lab's pair sets (SPEC §10.5): imported pairs with their human votes and judge
verdicts kept exactly as given, and the lab runs that judged them through the engine.

They were created by the labels app and keep its table names (``labels_pairset``, …): the
lab's migration 0001 took them over without touching a row."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from runs.models import Run
from runs.models.suites import identifier


class PairSetQuerySet(models.QuerySet):
    def with_counts(self) -> PairSetQuerySet:
        return self.annotate(
            pair_count=models.Count("items", distinct=True),
            run_count=models.Count("judge_runs", distinct=True),
        )


class PairSet(models.Model):
    """An imported file of pairs; its name is an identifier, so ``lab-<name>`` names the
    suite its lab runs judge."""

    name = models.CharField(max_length=60, unique=True, validators=[identifier])
    source_name = models.CharField(max_length=255, blank=True, help_text="The file imported.")
    sha256 = models.CharField(max_length=64, help_text="Of the file's bytes.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = PairSetQuerySet.as_manager()

    class Meta:
        db_table = "labels_pairset"
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return self.name

    @property
    def suite_name(self) -> str:
        return f"lab-{self.name}"


class PairSetItem(models.Model):
    """One pair of a set, from one line of the file. ``votes`` ([{labeller, prefer}]) and
    ``verdicts`` ([{judge, order, prefer}]) are stored as given, ``prefer`` in a / b / tie
    terms; ``task_id`` and ``case_id`` are its identifiers in the lab suite."""

    pairset = models.ForeignKey(PairSet, on_delete=models.CASCADE, related_name="items")
    line = models.PositiveIntegerField()
    pair_id = models.CharField(max_length=200)
    task = models.CharField(max_length=200, blank=True, help_text="As given; blank for none.")
    task_id = models.CharField(max_length=64)
    case_id = models.CharField(max_length=64)
    question = models.TextField()
    answer_a = models.TextField(blank=True)
    answer_b = models.TextField(blank=True)
    model_a = models.CharField(max_length=300, blank=True)
    model_b = models.CharField(max_length=300, blank=True)
    votes = models.JSONField(default=list)
    verdicts = models.JSONField(default=list)

    class Meta:
        db_table = "labels_pairsetitem"
        ordering = ["line"]
        constraints = [
            models.UniqueConstraint(fields=["pairset", "pair_id"], name="one_pair_id_per_set"),
            models.UniqueConstraint(fields=["pairset", "case_id"], name="one_case_id_per_set"),
        ]

    def __str__(self) -> str:
        return f"{self.pairset_id} {self.pair_id}"


class PairSetJudgeRun(models.Model):
    """A run of one judge configuration (model × rubric) over a pair set: a Run of the
    engine whose answers were given. ``name`` is the judge's column in the lab."""

    pairset = models.ForeignKey(PairSet, on_delete=models.CASCADE, related_name="judge_runs")
    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="lab")
    name = models.CharField(max_length=400)
    judge = models.CharField(max_length=300)
    rubric = models.TextField(blank=True)
    fake = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "labels_pairsetjudgerun"
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.pairset_id} {self.name}"
