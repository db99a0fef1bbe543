"""The shard's writer: outcomes written behind the calls, and what happens when it cannot."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import OperationalError

from runs.engine import writer
from runs.models import Answer, Run
from tests.helpers.engine import MockLLM, execute, mock_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_write_that_fails_stops_the_calls_and_leaves_the_rows_claimed_for_a_retry(monkeypatch):
    run = mock_run(cases=20, concurrency=1, max_cost=Decimal("100"))

    def full_disk(self, batch):
        raise OperationalError("database or disk is full")

    monkeypatch.setattr(writer.Writer, "write", full_disk)
    mock = MockLLM(latency=0.02)

    with pytest.raises(OperationalError):
        execute(run.id, mock.transport)

    # The shard stopped within a poll of the failure instead of making all 40 calls whose
    # results it could not store; what it had claimed is still claimed, so it goes back to
    # pending after the lease, and the run is left active for a worker to finish.
    assert 0 < mock.count() < 40
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING
    assert not Answer.objects.filter(run=run, status=Answer.Status.DONE).exists()
    assert Answer.objects.filter(run=run, status=Answer.Status.CLAIMED).exists()
