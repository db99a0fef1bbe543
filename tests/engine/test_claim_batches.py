"""How many calls a shard claims at once: a few more than its slots when its calls wait on
something (a network), one writer batch when every call is answered in the process at once
(fake, scripted, given), where claims of a few calls each were most of a run's work."""

from __future__ import annotations

from decimal import Decimal
from unittest.mock import patch

import pytest

from runs.engine.claims import Claims
from runs.engine.runner import INSTANT_AHEAD
from runs.engine.writer import FLUSH_ROWS
from tests.helpers.engine import MockLLM, execute, mock_run, suite_text

pytestmark = pytest.mark.django_db(transaction=True)

CASES = 300  # x mock/a and mock/b: 600 answers
CAP = Decimal("1000")


def claimed_sizes(run, transport=None) -> list[int]:
    sizes: list[int] = []
    claim = Claims.claim

    def counted(self, limit):
        claimed = claim(self, limit)
        if claimed:
            sizes.append(len(claimed))
        return claimed

    with patch.object(Claims, "claim", counted):
        done = execute(run.id, transport)
    assert done.status == "done"
    assert sum(sizes) == 2 * CASES
    return sizes


def test_a_fake_run_claims_a_writer_batch_at_a_time():
    sizes = claimed_sizes(mock_run(cases=CASES, fake=True, max_cost=CAP))

    assert INSTANT_AHEAD == FLUSH_ROWS
    assert len(sizes) <= 5 and max(sizes) > 100  # 3 or 4 claims, not ~25 of 24 calls


def test_calls_that_wait_on_a_network_are_claimed_a_few_more_than_the_slots():
    sizes = claimed_sizes(mock_run(cases=CASES, max_cost=CAP), MockLLM().transport)

    # 8 slots a model, two models: claimed up to half the slots again (24), not 200
    assert max(sizes) <= 24 and len(sizes) >= 2 * CASES // 24


def test_the_judge_calls_are_claimed_at_once_after_the_answers(monkeypatch):
    """The claims of a shard's judge calls are not held back by its last claim of answers
    having found none left: with a poll of an hour the run still ends (it waited a poll,
    0.25 s, between its phases)."""
    text = suite_text(cases=4).replace("repeats: 1\n", "repeats: 1\njudge: {model: mock/a}\n")
    run = mock_run(text=text, fake=True, max_cost=CAP)
    monkeypatch.setattr("runs.engine.claims.POLL_S", 3600.0)

    done = execute(run.id, timeout=30)

    assert done.status == "done"
    assert done.judgements.filter(status="done").count() == 8  # 4 pairs, both orders
