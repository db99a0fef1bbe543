"""Scoring reads the answers' values, not Answer instances: building 100,000 model
instances was a third of reading them back (docs/performance.md)."""

from __future__ import annotations

from django.db.models.signals import post_init
from django.test import TestCase

from runs.engine.scoring import score_run
from runs.models import Answer
from tests.helpers.factories import make_answer, make_run


class ScoringReadsValuesTests(TestCase):
    def test_answers_are_scored_without_building_an_answer_from_each_row(self):
        run = make_run()
        for case in ("one", "two"):
            make_answer(run, "greet", case, "fake/small", text="Hello Ada.")
        make_answer(run, "greet", "one", "fake/large", status=Answer.Status.ERROR, text="")
        built = []

        def count(sender, instance, **kwargs):
            built.append(instance)

        post_init.connect(count, sender=Answer)
        try:
            assert score_run(run) == 2
        finally:
            post_init.disconnect(count, sender=Answer)
        assert built == []
        scored = Answer.objects.filter(run=run, scored_at__isnull=False)
        assert sorted(scored.values_list("case_id", "passed")) == [("one", True), ("two", True)]
