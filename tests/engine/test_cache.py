"""The response cache: an identical run is free, --no-cache calls again and still writes."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from django.db.models import Sum

from runs.models import Answer, CachedResponse, Run
from runs.results.progress import answer_totals
from tests.helpers.cli import evalsite, sqlite_rows
from tests.helpers.engine import CALL_COST, MockLLM, error, execute, mock_run, suite_text
from tests.helpers.factories import small_suite_text

pytestmark = pytest.mark.django_db(transaction=True)


def uncached_total(run: Run) -> Decimal:
    return Answer.objects.filter(run=run).aggregate(total=Sum("cost_if_uncached_usd"))["total"]


def test_an_identical_second_run_is_all_cache_hits_and_costs_nothing():
    mock = MockLLM()
    first = execute(mock_run(cases=3).id, mock.transport)
    assert mock.count() == 6 and first.spent_usd == 6 * CALL_COST

    second = mock_run(cases=3)
    assert second.estimate["cached_calls"] == 6
    assert Decimal(second.estimate["answers_usd"]) == 0
    second = execute(second.id, mock.transport)

    assert mock.count() == 6  # no new call
    answers = Answer.objects.filter(run=second)
    assert set(answers.values_list("status", "cached")) == {(Answer.Status.DONE, True)}
    assert second.spent_usd == 0 and second.reserved_usd == 0
    assert set(answers.values_list("cost_usd", flat=True)) == {Decimal(0)}
    assert uncached_total(second) == uncached_total(first) == 6 * CALL_COST
    assert second.uncached_usd == first.uncached_usd == 6 * CALL_COST
    first_texts = dict(Answer.objects.filter(run=first).values_list("request_hash", "text"))
    assert dict(answers.values_list("request_hash", "text")) == first_texts
    totals = answer_totals(second)
    assert totals["cache_hits"] == 6 and totals["cost_usd"] == "0.000000"
    assert Decimal(totals["cost_if_uncached_usd"]) == 6 * CALL_COST


def test_no_cache_calls_again_and_is_charged():
    mock = MockLLM()
    execute(mock_run(cases=2).id, mock.transport)

    again = mock_run(cases=2, no_cache=True)
    assert again.estimate["cached_calls"] == 0
    again = execute(again.id, mock.transport)

    assert mock.count() == 8
    assert set(mock.per_key().values()) == {2}
    assert not Answer.objects.filter(run=again, cached=True).exists()
    assert again.spent_usd == 4 * CALL_COST


def test_no_cache_still_writes_the_cache():
    mock = MockLLM()
    execute(mock_run(cases=2, no_cache=True).id, mock.transport)
    assert CachedResponse.objects.count() == 4

    later = execute(mock_run(cases=2).id, mock.transport)

    assert mock.count() == 4
    assert Answer.objects.filter(run=later, cached=True).count() == 4


def test_a_failed_call_is_not_cached():
    mock = MockLLM(lambda call: error(400, "bad"))
    execute(mock_run(cases=1).id, mock.transport)

    assert not CachedResponse.objects.exists()


def test_another_repeat_is_another_cache_entry():
    mock = MockLLM()
    run = execute(mock_run(cases=1, repeats=2).id, mock.transport)

    assert Answer.objects.filter(run=run, cached=False).count() == 4
    assert CachedResponse.objects.count() == 4


def test_the_cli_json_prints_the_run_id_status_report_path_and_totals(tmp_path):
    suite = tmp_path / "tiny.yaml"
    suite.write_text(small_suite_text("jsonrun"))
    data = tmp_path / "data"

    result = evalsite(data, "run", str(suite), "--fake", "--json")

    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert {"run_id", "status", "report_path", "totals"} <= set(summary)
    assert summary["status"] == "done"
    assert Path(summary["report_path"]).is_relative_to(data)
    assert summary["run_id"] in summary["report_path"]
    totals = summary["totals"]
    assert totals["answers"] == 4 and totals["cache_hits"] == 0
    assert totals["judge_calls"] == 2 * totals["pairs"] > 0
    assert not [f for f in summary["failures"] if not f["contestant"].startswith("judge")]
    assert totals["simulated"] is True
    assert Decimal(totals["cost_usd"]) > 0
    assert sqlite_rows(data, "select id, status from runs_run") == [(summary["run_id"], "done")]

    again = evalsite(data, "run", str(suite), "--fake", "--json")

    assert again.returncode == 0, again.stderr
    totals_again = json.loads(again.stdout)["totals"]
    assert totals_again["cache_hits"] == totals_again["calls"] == totals["calls"]
    assert Decimal(totals_again["cost_usd"]) == 0
    assert totals_again["cost_if_uncached_usd"] == totals["cost_if_uncached_usd"]


def test_a_judge_call_asked_again_counts_both_replies_if_uncached_from_the_cache(monkeypatch):
    """A judge reply that cannot be read is asked again, and the call's row accounts for
    both replies. Served from the cache, its "if uncached" cost was the second reply's
    alone: the rows of an identical run summed less than the first run's, and less than
    the run's own total (what MCP's history prints)."""
    from evalsite.core.providers import fake
    from runs.models import Judgement

    made = fake.FakeProvider.__init__

    def unreadable_first(self, **options):  # every first judge reply cannot be read
        made(self, **options, rates=fake.FakeRates(judge_parse_failure=1.0))

    monkeypatch.setattr(fake.FakeProvider, "__init__", unreadable_first)
    text = suite_text(cases=4).replace("repeats: 1\n", "repeats: 1\njudge: {model: mock/a}\n")
    runs = [execute(mock_run(text=text, fake=True, max_cost=Decimal(1000)).id) for _ in range(2)]

    def judge_uncached(run):
        calls = Judgement.objects.filter(run=run)
        assert calls.count() and not calls.filter(retried=False).exists()  # all asked again
        return calls.aggregate(total=Sum("cost_if_uncached_usd"))["total"]

    first, second = runs
    assert second.spent_usd == 0 and second.spent_judge_usd == 0
    assert judge_uncached(second) == judge_uncached(first) > 0
    for run in runs:
        assert uncached_total(run) + judge_uncached(run) == run.uncached_usd
