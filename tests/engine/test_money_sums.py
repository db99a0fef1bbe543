"""Money in the database: sums and F() updates are exact on SQLite and PostgreSQL alike."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Sum

from runs.models import Answer
from tests.helpers.factories import make_answer, make_run

AMOUNTS = [Decimal("0.1"), Decimal("0.2"), Decimal("0.3"), Decimal("1e-7"), Decimal("0.000123")]


def raw(sql: str, params: tuple = ()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


@pytest.mark.django_db
def test_many_reserve_and_settle_cycles_leave_nothing_reserved_and_the_exact_spend():
    run = make_run(cap_usd=Decimal("1000"))
    spent = Decimal(0)
    for amount, cost in zip(
        itertools.islice(itertools.cycle(AMOUNTS), 500),
        itertools.islice(itertools.cycle(reversed(AMOUNTS)), 500),
        strict=True,
    ):
        assert run.reserve(amount)
        run.settle(amount, cost, cost, judge=False)
        spent += cost

    run.refresh_from_db()
    assert run.reserved_usd == 0
    assert run.spent_answers_usd == spent == Decimal("60.01231")
    assert run.uncached_usd == spent
    ((reserved, stored),) = raw(
        "select reserved_usd, spent_answers_usd from runs_run where id = %s", (run.pk,)
    )
    assert reserved == 0 and isinstance(stored, int)  # whole nano-USD, never a float


@pytest.mark.django_db
def test_the_sum_of_call_costs_is_the_runs_spend_to_the_last_digit():
    run = make_run(cap_usd=Decimal("1000"))
    costs = list(itertools.islice(itertools.cycle(AMOUNTS), 300))
    for index, cost in enumerate(costs):
        make_answer(run, "t", f"c{index}", "fake/small", cost_usd=cost, cost_if_uncached_usd=cost)
        run.settle(Decimal(0), cost, cost, judge=False)

    run.refresh_from_db()
    totals = Answer.objects.filter(run=run).aggregate(
        cost=Sum("cost_usd"), uncached=Sum("cost_if_uncached_usd")
    )
    assert totals["cost"] == totals["uncached"] == run.spent_answers_usd == sum(costs)
    assert isinstance(totals["cost"], Decimal)


@pytest.mark.django_db
def test_a_reservation_that_would_pass_the_cap_by_one_nano_dollar_is_refused():
    run = make_run(cap_usd=Decimal("0.3"))
    assert run.reserve(Decimal("0.1")) and run.reserve(Decimal("0.2"))
    assert not run.reserve(Decimal("1e-9"))
    run.settle(Decimal("0.2"), Decimal("0.2"), None, judge=True)
    run.settle(Decimal("0.1"), Decimal("0.1"), None, judge=False)
    run.refresh_from_db()
    assert (run.reserved_usd, run.spent_usd) == (0, Decimal("0.3"))
    assert not run.reserve(Decimal("1e-9"))


@pytest.mark.django_db
def test_amounts_are_stored_to_the_nano_dollar_and_read_back_as_decimal_usd():
    run = make_run()
    answer = make_answer(run, "t", "c", "fake/small", cost_usd=Decimal("0.0000000025"))
    other = make_answer(run, "t", "d", "fake/small", cost_usd=None, cost_if_uncached_usd=0.1)
    ((nano,),) = raw("select cost_usd from runs_answer where id = %s", (answer.pk,))
    assert nano == 2  # half-even, like every amount stored

    answer.refresh_from_db()
    other.refresh_from_db()
    assert answer.cost_usd == Decimal("2E-9") and isinstance(answer.cost_usd, Decimal)
    assert (other.cost_usd, other.cost_if_uncached_usd) == (None, Decimal("0.1"))
    rows = Answer.objects.filter(run=run)
    assert rows.filter(cost_if_uncached_usd__gte=0.05).get() == other  # a float bound, in USD
    assert rows.filter(cost_usd__lt=Decimal("3e-9")).get() == answer
    assert list(rows.values_list("cost_usd", flat=True).order_by("case_id")) == [
        Decimal("2E-9"),
        None,
    ]


@pytest.mark.django_db(transaction=True)
def test_the_migration_turns_drifted_decimals_into_exact_nano_dollars_and_back():
    run = make_run(cap_usd=Decimal("1"))
    answer = make_answer(run, "t", "c", "fake/small", cost_usd=Decimal("0.12345678"))
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    before = [("runs", "0009_label_and_lab_suites")]

    def floats(sql: str, pk) -> list[float]:
        return [float(value) for value in raw(sql, (pk,))[0]]

    MigrationExecutor(connection).migrate(before)
    try:
        assert floats("select cost_usd from runs_answer where id = %s", answer.pk) == [0.12345678]
        # What float arithmetic in SQL left behind: a reservation a hair below zero, a spend
        # a hair above 0.3, a cost with its float tail.
        raw(
            "update runs_run set reserved_usd = -2.0816681711721685e-17, "
            "spent_answers_usd = 0.30000000000000004, uncached_usd = 0.1 + 0.2 "
            "where id = %s",
            (run.pk,),
        )
        raw("update runs_answer set cost_if_uncached_usd = 0.1 + 0.2 where id = %s", (answer.pk,))
    finally:
        MigrationExecutor(connection).migrate(latest)

    nanos = raw(
        "select reserved_usd, spent_answers_usd, spent_judge_usd, uncached_usd from runs_run "
        "where id = %s",
        (run.pk,),
    )
    assert nanos == [(0, 300_000_000, 0, 300_000_000)]
    answer.refresh_from_db()
    assert (answer.cost_usd, answer.cost_if_uncached_usd, answer.reserved_usd) == (
        Decimal("0.12345678"),
        Decimal("0.3"),
        0,
    )

    MigrationExecutor(connection).migrate(before)
    try:
        sql = "select spent_answers_usd, uncached_usd from runs_run where id = %s"
        assert floats(sql, run.pk) == [0.3, 0.3]
    finally:
        MigrationExecutor(connection).migrate(latest)
