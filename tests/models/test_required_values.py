"""The accessors that read a nullable column a caller needs set: its value, or an error
that names what is missing (instead of an AttributeError on None further on)."""

from __future__ import annotations

import pytest
from django.test import TestCase
from django.utils import timezone

from runs.models import Answer, Judgement, Run
from runs.models.rows import insert_each, update_each
from tests.helpers.factories import make_answer, make_pair, make_run


class StoredReportTests(TestCase):
    def test_a_run_with_a_report_gives_it(self):
        run = make_run(status=Run.Status.DONE, report={"run_id": "x", "gates_passed": True})
        assert run.stored_report == {"run_id": "x", "gates_passed": True}

    def test_a_run_without_one_raises_no_report_saying_what_state_it_is_in(self):
        run = make_run(status=Run.Status.FAILED, detail="failed while running: boom")
        with pytest.raises(Run.NoReport) as caught:
            run.stored_report  # noqa: B018 - the property raises
        assert caught.value.run == run
        assert str(caught.value) == (
            f"run {run.id} has no report (it is failed: failed while running: boom)"
        )

    def test_an_active_run_has_no_report_yet(self):
        run = make_run(status=Run.Status.RUNNING)
        with pytest.raises(Run.NoReport, match="it is running"):
            run.stored_report  # noqa: B018 - the property raises


class GradedAnswerTests(TestCase):
    def test_a_grade_call_gives_the_answer_it_grades(self):
        run = make_run()
        answer = make_answer(run, "greet", "one", "fake/small")
        grade = Judgement.objects.create(
            run=run, task_id="greet", case_id="one", kind=Judgement.Kind.GRADE,
            answer=answer, judge_model="fake/large", request={}, request_hash="g1",
        )  # fmt: skip
        assert grade.graded_answer == answer

    def test_a_pair_judgement_grades_no_answer(self):
        run = make_run(judge={"model": "fake/large"})
        pair = make_pair(run, "greet", "one", sides=("candidate", "candidate"))
        judgement = pair.judgements.first()
        with pytest.raises(LookupError, match=f"judgement {judgement.pk} is a pair call"):
            judgement.graded_answer  # noqa: B018 - the property raises


class UpdateEachColumnsTests(TestCase):
    def test_a_relation_seen_from_its_other_side_is_refused_by_name(self):
        run = make_run()
        answer = make_answer(run, "greet", "one", "fake/small")
        with pytest.raises(ValueError, match="Answer.grades is the other side of a relation"):
            update_each(Answer, {answer.pk: {"grades": 1}})

    def test_columns_are_written_as_before(self):
        run = make_run()
        answer = make_answer(run, "greet", "one", "fake/small", text="before")
        assert update_each(Answer, {answer.pk: {"text": "after"}}, {"run": run.pk}) == {answer.pk}
        answer.refresh_from_db()
        assert answer.text == "after"


def _counting_preps(monkeypatch, name: str) -> list:
    """Each value `Answer.<name>`'s field prepares for the database, as it is prepared."""
    field = Answer._meta.get_field(name)
    seen: list = []
    prepare = field.get_db_prep_save

    def counted(value, connection):
        seen.append(value)
        return prepare(value, connection)

    monkeypatch.setattr(field, "get_db_prep_save", counted)
    return seen


@pytest.fixture
def answers(db):
    run = make_run()
    return [make_answer(run, "greet", f"c{n}", "fake/small") for n in range(5)]


def test_a_value_many_rows_share_is_prepared_once_and_a_mapping_each_time(answers, monkeypatch):
    times = _counting_preps(monkeypatch, "scored_at")
    checks = _counting_preps(monkeypatch, "checks")
    now = timezone.now()
    changes = {a.pk: {"scored_at": now, "checks": {"results": [a.case_id]}} for a in answers}
    update_each(Answer, changes)
    assert times == [now]  # not once a row: a batch of scores shares its time
    assert len(checks) == 5
    for answer in Answer.objects.filter(pk__in=changes):
        assert (answer.scored_at, answer.checks) == (now, {"results": [answer.case_id]})


def test_an_insert_prepares_a_shared_value_once(answers, monkeypatch):
    statuses = _counting_preps(monkeypatch, "status")
    run_id = answers[0].run_id
    rows = [
        {"run_id": run_id, "task_id": "greet", "case_id": f"new{n}", "contestant": "fake/small",
         "status": Answer.Status.DONE, "request": {}, "request_hash": f"h{n}"}
        for n in range(4)
    ]  # fmt: skip
    assert insert_each(Answer, rows) == 4
    assert statuses == [Answer.Status.PENDING, Answer.Status.DONE]  # the default, then theirs
    assert Answer.objects.filter(case_id__startswith="new", status=Answer.Status.DONE).count() == 4


class InsertEachTests(TestCase):
    def test_rows_are_stored_as_the_orm_stores_them_with_defaults_for_the_rest(self):
        run = make_run()
        rows = [
            {"run_id": run.pk, "task_id": "greet", "case_id": c, "contestant": "fake/small",
             "request": {"messages": [{"role": "user", "content": "hi ü"}]}, "request_hash": c}
            for c in ("one", "two")
        ]  # fmt: skip
        assert insert_each(Answer, rows) == 2
        stored = Answer.objects.get(run=run, case_id="two")
        assert stored.request == {"messages": [{"role": "user", "content": "hi ü"}]}
        assert stored.status == Answer.Status.PENDING
        assert stored.reserved_usd == 0
        assert stored.attempts == 0
        assert stored.text == ""
        assert stored.parsed_json is None
        assert stored.finished_at is None

    def test_a_name_that_is_no_column_is_refused(self):
        run = make_run()
        with pytest.raises(ValueError, match=r"Answer has no field \['run'\]"):
            insert_each(Answer, [{"run": run.pk, "task_id": "greet"}])
        assert not Answer.objects.filter(run=run).exists()
