"""The judge lab's models moved from the labels app to the lab app with their tables: a
database migrated before the move keeps every pair set, pair and lab run, found afterwards
through the lab app's models and from the run they judged."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from lab.models import PairSet, PairSetItem, PairSetJudgeRun
from runs.models import Run
from tests.helpers.factories import make_run, make_user

BEFORE_THE_MOVE = ("labels", "0004_label_moved_to_runs")


def state_before_the_move() -> list[tuple[str, str | None]]:
    """Every app at its latest migration except labels (before it let the models go) and
    lab (not migrated at all)."""
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    others = [node for node in leaves if node[0] not in ("labels", "lab")]
    return [*others, BEFORE_THE_MOVE, ("lab", None)]


def lab_rows_in_the_old_app(apps, run_id: str, user_id: int) -> None:
    """A pair set with two pairs, judged by one lab run, written through the labels app's
    historical models as the code before the move wrote them."""
    old_set = apps.get_model("labels", "PairSet")
    old_item = apps.get_model("labels", "PairSetItem")
    old_lab_run = apps.get_model("labels", "PairSetJudgeRun")
    pairset = old_set.objects.create(
        name="kept", source_name="kept.jsonl", sha256="ab" * 32, created_by_id=user_id
    )
    for line, pair_id in enumerate(("p1", "p2"), start=1):
        old_item.objects.create(
            pairset=pairset, line=line, pair_id=pair_id, task="", task_id="pairs",
            case_id=pair_id, question=f"Q {pair_id}", answer_a="A", answer_b="B",
            model_a="m1", model_b="m2", votes=[{"labeller": "ada", "prefer": "a"}],
            verdicts=[{"judge": "j1", "order": 1, "prefer": "b"}],
        )  # fmt: skip
    old_lab_run.objects.create(
        pairset=pairset, run_id=run_id, name="fake/small", judge="fake/small", fake=True
    )


@pytest.mark.django_db(transaction=True)
def test_lab_rows_written_before_the_move_are_found_through_the_lab_app_after_it():
    run, user = make_run(), make_user()
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    before = state_before_the_move()
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old_apps = MigrationExecutor(connection).loader.project_state(before[:-1]).apps
        lab_rows_in_the_old_app(old_apps, run.pk, user.pk)
    finally:
        MigrationExecutor(connection).migrate(latest)

    pairset = PairSet.objects.get(name="kept")
    assert (pairset.source_name, pairset.created_by, pairset.suite_name) == (
        "kept.jsonl", user, "lab-kept",
    )  # fmt: skip
    items = PairSetItem.objects.filter(pairset=pairset)
    assert [(i.line, i.pair_id, i.question) for i in items] == [
        (1, "p1", "Q p1"),
        (2, "p2", "Q p2"),
    ]
    assert items[0].verdicts == [{"judge": "j1", "order": 1, "prefer": "b"}]
    lab_run = PairSetJudgeRun.objects.get()
    assert (lab_run.pairset, lab_run.name, lab_run.fake) == (pairset, "fake/small", True)
    # The run's reverse accessor follows the model to its new app.
    assert Run.objects.get(pk=run.pk).lab == lab_run
    assert PairSet.objects.with_counts().get().pair_count == 2


def test_the_moved_models_keep_the_tables_they_were_created_with():
    tables = {model._meta.db_table for model in (PairSet, PairSetItem, PairSetJudgeRun)}
    assert tables == {"labels_pairset", "labels_pairsetitem", "labels_pairsetjudgerun"}
    assert PairSet._meta.app_label == "lab"
