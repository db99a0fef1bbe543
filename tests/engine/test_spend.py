"""Spend is a reservation against the cap: racing shards never push it past the cap."""

from __future__ import annotations

import json
import threading
from decimal import Decimal

import pytest
from django.db.models import Sum

from evalsite.core.plan import worst_case as worst_case_of
from evalsite.core.pricing import PriceRow
from evalsite.core.providers.base import Request
from runs.engine import runner
from runs.models import Answer, Run
from tests.helpers.cli import evalsite, sqlite_rows
from tests.helpers.engine import PRICE, MockLLM, mock_run, reply
from tests.helpers.factories import small_suite_text

CAP = Decimal("0.5")


def worst_case(answer: Answer) -> Decimal:
    row = PriceRow(answer.model, Decimal(PRICE[0]), Decimal(PRICE[1]))
    return worst_case_of(Request(**answer.request), row).cost_usd


def run_shards_in_threads(run_id: str, transport, shards: int = 2) -> list[BaseException]:
    errors: list[BaseException] = []

    def shard(index: int) -> None:
        try:
            runner.execute(run_id, transport=transport, shards=shards, index=index)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)

    threads = [threading.Thread(target=shard, args=(i,)) for i in range(shards)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a shard never finished"
    return errors


@pytest.mark.django_db(transaction=True)
def test_two_shards_racing_on_one_cap_never_exceed_it():
    run = mock_run(cases=10)
    # The estimate fit the default cap; the work turns out dearer than the cap now allows
    # (as when usage runs above the estimate): each call costs exactly its worst case.
    Run.objects.filter(pk=run.id).update(cap_usd=CAP)
    first = Answer.objects.filter(run=run).first()
    per_call = worst_case(first)
    tokens = int(per_call * 1000)  # $0.001 a token at PRICE
    mock = MockLLM(
        lambda call: reply("ok", prompt_tokens=tokens - 50, completion_tokens=50), latency=0.1
    )
    assert Answer.objects.filter(run=run).count() * per_call > CAP

    errors = run_shards_in_threads(run.id, mock.transport)

    assert errors == []
    run.refresh_from_db()
    assert run.status == Run.Status.ABORTED_OVER_BUDGET
    assert run.spent_usd <= run.cap_usd
    assert run.reserved_usd == 0
    done = Answer.objects.filter(run=run, status=Answer.Status.DONE)
    assert done.aggregate(total=Sum("cost_usd"))["total"] == run.spent_answers_usd
    assert mock.count() == done.count()  # every call paid for is an answer kept
    assert done.count() == int(CAP / per_call)  # and the cap was used, not abandoned early
    assert not Answer.objects.filter(run=run, status=Answer.Status.CLAIMED).exists()
    assert Answer.objects.filter(run=run, status=Answer.Status.PENDING).count() == (
        20 - done.count()
    )
    assert "cap" in run.detail


@pytest.mark.django_db(transaction=True)
def test_two_shards_that_fit_the_cap_finish_every_answer_once():
    run = mock_run(cases=10)
    mock = MockLLM(latency=0.02)

    errors = run_shards_in_threads(run.id, mock.transport)

    assert errors == []
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert set(mock.per_key().values()) == {1} and mock.count() == 20
    done = Answer.objects.filter(run=run, status=Answer.Status.DONE)
    assert done.count() == 20
    assert done.aggregate(total=Sum("cost_usd"))["total"] == run.spent_answers_usd
    assert run.reserved_usd == 0


def test_the_cli_refuses_a_run_over_its_cap_with_exit_4_and_makes_no_call(tmp_path):
    suite = tmp_path / "tiny.yaml"
    suite.write_text(small_suite_text("capped"))
    data = tmp_path / "data"

    result = evalsite(data, "run", str(suite), "--fake", "--max-cost", "0.0001", "--json")

    assert result.returncode == 4, result.stderr
    summary = json.loads(result.stdout)
    assert summary["status"] == "refused"
    assert "over the cap" in summary["detail"]
    assert sqlite_rows(data, "select status from runs_run") == [("refused",)]
    assert sqlite_rows(data, "select count(*) from runs_answer") == [(0,)]
    assert sqlite_rows(data, "select count(*) from runs_cachedresponse") == [(0,)]
