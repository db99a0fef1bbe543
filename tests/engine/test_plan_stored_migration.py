"""Every run stored before runs' migration 0019 stored its plan whole with itself: the
migration says so (plan_stored_at is its created_at), so the workers' sweep never takes a
run made before the upgrade for one whose process died while storing its plan."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from runs.models import Run
from tests.helpers.factories import make_run

BEFORE = ("runs", "0018_pair_labelled")


@pytest.mark.django_db(transaction=True)
def test_a_run_stored_before_the_migration_has_its_whole_plan_stored_at_its_creation():
    running = make_run(status=Run.Status.RUNNING, plan_stored_at=None)
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    before = [BEFORE if app == "runs" else (app, name) for app, name in latest]
    MigrationExecutor(connection).migrate(before)
    MigrationExecutor(connection).migrate(latest)

    running.refresh_from_db()
    assert running.plan_whole
    assert running.plan_stored_at == running.created_at
