"""Pairs of answers and the judge's calls on them (SPEC §8), and single-answer grades (§7.6)."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import models

from runs.models.answer import Answer, Call
from runs.models.label import CONTENT_FIELDS, PAIR_CONTENT_FIELDS
from runs.models.run import Run


def text_sha(text: str) -> str:
    """The sha256 of an answer text: one half of a pair's content key (SPEC §10.1)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class PairQuerySet(models.QuerySet["Pair"]):
    def included(self) -> PairQuerySet:
        return self.filter(excluded_reason="")

    def excluded(self) -> PairQuerySet:
        return self.exclude(excluded_reason="")

    def with_content(self, content: dict[str, str]) -> PairQuerySet:
        """The pairs with this content key (a label's field names), in its orientation."""
        return self.filter(
            **{
                field: content[name]
                for field, name in zip(PAIR_CONTENT_FIELDS, CONTENT_FIELDS, strict=True)
            }
        )

    def with_content_either_way(self, content: dict[str, str]) -> PairQuerySet:
        """The pairs with this content key in either orientation (a label given with the
        sides the other way round applies to them too, its preference mirrored)."""
        sides = (content["baseline"], content["candidate"])
        shas = (content["baseline_sha"], content["candidate_sha"])
        return self.filter(
            task_id=content["task_id"],
            case_id=content["case_id"],
            baseline_contestant__in=sides,
            candidate_contestant__in=sides,
            baseline_sha__in=shas,
        )

    def judged(self) -> PairQuerySet:
        return self.included().filter(score__isnull=False)

    def with_consensus(self) -> PairQuerySet:
        """Pairs with the labellers' consensus, in no order: the few of a big run, found by
        the partial index ``pair_labelled`` without reading the others (ordered, the
        database walked every pair of the run in the order's index instead)."""
        return self.exclude(human="").order_by()

    def disagreements(self) -> PairQuerySet:
        """Judged pairs whose labellers' consensus differs from the judge's category."""
        return self.judged().exclude(human="").exclude(human=models.F("category"))


class Pair(models.Model):
    """A baseline answer and a candidate answer of one case and repeat.

    Excluded pairs carry the reason (SPEC §8) and are never sent to the judge; an included
    pair gets two judge calls and, once both are read, its combined score and category.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="pairs")
    task_id = models.CharField(max_length=64)
    case_id = models.CharField(max_length=64)
    repeat = models.PositiveSmallIntegerField(default=0)
    baseline = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="+")
    candidate = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="+")
    baseline_contestant = models.CharField(max_length=300)
    candidate_contestant = models.CharField(max_length=300)
    baseline_sha = models.CharField(max_length=64, blank=True)
    candidate_sha = models.CharField(max_length=64, blank=True)
    excluded_reason = models.CharField(max_length=24, blank=True)
    excluded_side = models.CharField(max_length=10, blank=True)
    score = models.FloatField(null=True, blank=True, help_text="For the candidate, 0 to 1.")
    category = models.CharField(max_length=10, blank=True)
    flip = models.BooleanField(null=True)
    human = models.CharField(
        max_length=10, blank=True, help_text="The labellers' consensus, when there is one."
    )

    objects = PairQuerySet.as_manager()

    class Meta:
        ordering = ["task_id", "case_id", "repeat", "candidate_contestant"]
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "run", "task_id", "case_id", "repeat", "baseline_contestant",
                    "candidate_contestant",
                ],
                name="one_pair",
            )
        ]  # fmt: skip
        indexes = [
            models.Index(fields=["task_id", "case_id"], name="pair_case"),
            # the few pairs with the labellers' consensus (store_human reads them on each
            # label; without it, every pair of a 100,000-pair run: 26 ms a label)
            models.Index(fields=["run"], condition=~models.Q(human=""), name="pair_labelled"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.run_id} {self.task_id}/{self.case_id} #{self.repeat} "
            f"{self.candidate_contestant} vs {self.baseline_contestant}"
        )

    @property
    def included(self) -> bool:
        return not self.excluded_reason

    @property
    def content_key(self) -> tuple[str, ...]:
        """The pair content key (runs.models.label.CONTENT_FIELDS' order)."""
        return tuple(getattr(self, field) for field in PAIR_CONTENT_FIELDS)

    @property
    def content(self) -> dict[str, Any]:
        """The content key by a label's field names: to find or make its labels."""
        return dict(zip(CONTENT_FIELDS, self.content_key, strict=True))


class Judgement(Call):
    """One judge call: a pair in one order (1 = baseline shown first), or a grade of one
    answer. Its verdict is kept in shown terms and mapped to baseline / candidate / tie."""

    class Kind(models.TextChoices):
        PAIR = "pair"
        GRADE = "grade"
        RECHECK = "recheck"  # a pair asked again in one order (judge.consistency)

    class Parse(models.TextChoices):
        OK = "ok"
        UNPARSEABLE = "unparseable"

    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.PAIR)
    judge_model = models.CharField(max_length=300)
    pair = models.ForeignKey(
        Pair, null=True, blank=True, on_delete=models.CASCADE, related_name="judgements"
    )
    order = models.PositiveSmallIntegerField(default=0)
    answer = models.ForeignKey(
        Answer, null=True, blank=True, on_delete=models.CASCADE, related_name="grades"
    )
    retried = models.BooleanField(default=False, help_text="Asked again after an unread reply.")
    first_cached = models.BooleanField(
        default=False, help_text="The unread first reply came from the cache."
    )
    parse_status = models.CharField(max_length=12, choices=Parse.choices, blank=True)
    parse_error = models.TextField(blank=True)
    winner = models.CharField(max_length=4, blank=True, help_text="1, 2 or tie, as shown.")
    side = models.CharField(max_length=10, blank=True, help_text="baseline, candidate or tie.")
    grade_score = models.PositiveSmallIntegerField(null=True, blank=True)
    rationale = models.TextField(blank=True)

    # What the engine reads of a claimed judge call: its model, what reading its reply
    # needs, and an asked-again call's first costs and tokens (runs.engine.outcomes).
    CLAIM_FIELDS = Call.CLAIM_FIELDS | {
        "judge_model", "kind", "pair", "order", "answer", "retried", "cost_usd",
        "cost_if_uncached_usd", "input_tokens", "output_tokens",
    }  # fmt: skip

    class Meta:
        ordering = ["task_id", "case_id", "repeat", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["pair", "order"],
                condition=models.Q(kind="pair"),
                name="one_judgement_per_order",
            ),
            models.UniqueConstraint(
                fields=["answer"], condition=models.Q(kind="grade"), name="one_grade"
            ),
        ]
        indexes = [models.Index(fields=["run", "status"], name="judgement_run_status")]

    def __str__(self) -> str:
        target = f"pair {self.pair_id} order {self.order}" if self.pair_id else "grade"
        return f"{self.run_id} {self.task_id}/{self.case_id} {target}"

    @property
    def model(self) -> str:
        return self.judge_model

    @property
    def graded_answer(self) -> Answer:
        """The answer a grade call grades; LookupError for a judgement of a pair."""
        if self.answer is None:
            raise LookupError(f"judgement {self.pk} is a {self.kind} call: it grades no answer")
        return self.answer

    @property
    def is_judge_call(self) -> bool:
        return True
