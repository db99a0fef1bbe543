"""A shard cut off from the others for longer than the lease (the multi-host soak's link cut,
docs/scale-out.md): its claims are taken over, and when it comes back it must not send the
calls it had claimed but not yet sent. The shard's clock is moved instead of waiting."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings
from django.utils import timezone

from runs.engine import claims, runner
from runs.models import Answer, Run
from tests.helpers.engine import MockLLM, answer_key, execute, mock_run, suite_text, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

LEASE_S = 60.0


class MovedClock:
    """runner's `time`, `offset` seconds ahead (the only function it uses is monotonic)."""

    offset = 0.0

    @classmethod
    def monotonic(cls) -> float:
        return time.monotonic() + cls.offset


@override_settings(EVALSITE_CLAIM_LEASE_S=LEASE_S)
def test_a_claim_taken_over_while_the_shard_was_cut_off_is_not_sent(monkeypatch):
    monkeypatch.setattr(runner, "time", MovedClock)
    monkeypatch.setattr(claims, "time", MovedClock)  # where the take-over check reads it
    monkeypatch.setattr(MovedClock, "offset", 0.0)
    run = mock_run(text=suite_text(models=("mock/a",), cases=2), concurrency=1)
    answers = {answer_key(a): a for a in Answer.objects.filter(run=run)}
    mock = MockLLM(hold=lambda call: call.attempt == 1 and len(mock.calls) == 1)
    shard = execute_in_background(run.id, mock)

    # The first call is in flight; the second is claimed and waits for the slot. The shard is
    # cut off for longer than the lease: another shard takes the second claim and answers it.
    wait_until(lambda: mock.held == 1)
    (sent,) = mock.calls
    taken = next(a for key, a in answers.items() if key != sent.key)
    Answer.objects.filter(pk=taken.pk).update(
        status=Answer.Status.DONE, claimed_by="", text="by the shard that took it over",
        finished_at=timezone.now(),
    )  # fmt: skip
    MovedClock.offset = LEASE_S + 1
    mock.release.set()
    run = shard()

    assert run.status == Run.Status.DONE
    assert mock.count() == 1, "the taken-over claim was sent (and paid) again"
    assert Answer.objects.get(pk=taken.pk).text == "by the shard that took it over"


def execute_in_background(run_id: str, mock: MockLLM):
    import threading

    result: list = []
    thread = threading.Thread(target=lambda: result.append(execute(run_id, mock.transport)))
    thread.start()

    def join() -> Run:
        thread.join(60)
        assert result, "the shard did not return"
        return result[0]

    return join
