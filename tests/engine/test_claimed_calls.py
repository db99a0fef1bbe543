"""What a shard reads of a claimed call: its worst case (a cache hit has none), and the
provider it is made with (a judge call needs the run's judge)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import TestCase

from evalsite.core.pacing import Limits
from evalsite.core.plan import WorstCase
from evalsite.core.providers.base import Request
from runs.engine.claims import Claim
from runs.engine.runner import Setup
from runs.models import Answer, CachedResponse, Judgement
from tests.helpers.factories import make_answer, make_run

REQUEST = Request(model="fake/small", messages=({"role": "user", "content": "hi"},))


class WorstCaseTests(TestCase):
    def test_a_claim_to_be_called_gives_its_worst_case(self):
        worst = WorstCase(input_tokens=10, output_tokens=20, cost_usd=Decimal("0.001"))
        claim = Claim(Answer(pk=7), REQUEST, worst=worst)
        assert claim.worst_case() == worst

    def test_a_cache_hit_has_none_and_says_so(self):
        claim = Claim(Answer(pk=7), REQUEST, hit=CachedResponse())
        with pytest.raises(LookupError, match="call 7 was claimed as a cache hit"):
            claim.worst_case()


class ProviderTests(TestCase):
    def test_an_answer_is_made_with_its_contestants_provider(self):
        run = make_run(options={"fake": True})
        setup = Setup(run, Limits(2))
        answer = make_answer(run, "greet", "one", "fake/large")
        assert setup.provider(answer) is setup.providers["fake/large"]

    def test_a_judge_call_is_made_with_the_judge(self):
        run = make_run(options={"fake": True}, judge={"model": "fake/large"})
        setup = Setup(run, Limits(2))
        call = Judgement(run=run, judge_model="fake/large")
        assert setup.judge is not None
        assert setup.provider(call) is setup.judge

    def test_a_judge_call_of_a_run_without_a_judge_is_refused_by_name(self):
        run = make_run(options={"fake": True})
        setup = Setup(run, Limits(2))
        call = Judgement(pk=3, run=run, judge_model="fake/large")
        with pytest.raises(LookupError, match=f"judge call 3 of run {run.id}, which has no judge"):
            setup.provider(call)
