"""What a process keeps of a done run and of a suite version: worked out once, then kept out
of the garbage collector's walks (runs/kept.py), and an unfinished run's never kept."""

from __future__ import annotations

import gc

import pytest

from runs.models import Run
from runs.models.suites import forget_read_versions
from runs.results.memo import FinishedRunMemo
from tests.helpers.factories import make_run, make_suite_version

pytestmark = pytest.mark.django_db


def test_a_done_runs_value_is_worked_out_once_and_frozen_out_of_the_collectors_walks():
    memo: FinishedRunMemo[list[int]] = FinishedRunMemo()
    run = make_run(status=Run.Status.DONE)
    made = []
    frozen = gc.get_freeze_count()

    first = memo.get(run, lambda: made.append(1) or [1, 2, 3])

    assert memo.get(run, lambda: made.append(1) or []) is first and made == [1]
    assert gc.get_freeze_count() > frozen


def test_an_unfinished_runs_value_is_worked_out_each_time_and_not_frozen():
    memo: FinishedRunMemo[list[int]] = FinishedRunMemo()
    run = make_run(status=Run.Status.JUDGING)
    gc.unfreeze()

    memo.get(run, list)
    memo.get(run, list)

    assert gc.get_freeze_count() == 0


def test_a_versions_document_is_read_once_and_frozen_out_of_the_collectors_walks():
    version = make_suite_version()
    forget_read_versions()
    gc.unfreeze()

    document = version.document

    assert gc.get_freeze_count() > 0
    assert type(version).objects.get(pk=version.pk).document is document
