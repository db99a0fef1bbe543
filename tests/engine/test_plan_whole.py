"""A run executed in the process that planned it stores its first answers with the run, and
the rest of its plan on its own database thread while its first calls are in flight
(runs.planning.planner.start_plan). Until the rest is stored its plan is not whole: it is
never judged or reported on part of it, and a run whose process stopped first is failed,
never finished on what was stored."""

from __future__ import annotations

import datetime as dt
import errno
import threading

import pytest
from django.utils import timezone

from evalsite.core.suites import parse_suite
from runs import sealed
from runs.engine import phases, runner, tasks
from runs.engine.local import Stop, execute_here
from runs.engine.resume import ResumeRefused, resume_run
from runs.models import Answer, Call, Run
from runs.planning import planner
from runs.planning.planner import RunOptions, make_plan, start_plan
from runs.results.progress import progress
from tests.helpers.engine import MockLLM, make_endpoint, make_mock_prices, suite_text, wait_until
from tests.helpers.factories import make_suite_version

LEASE_S = 600
ANSWERS = 8  # suite_text(): 4 cases × mock/a, mock/b


@pytest.fixture
def small_batches(monkeypatch):
    """Two answers stored with the run, the rest two a batch: three batches after the first."""
    monkeypatch.setattr(planner, "FIRST_ANSWERS", 2)
    monkeypatch.setattr(planner, "ANSWER_BATCH", 2)


def _started(**options):
    make_endpoint()
    make_mock_prices()
    text = suite_text()
    loaded = parse_suite(text.encode(), filename="faults.yaml", origin="upload")
    return start_plan(make_plan(make_suite_version(text), loaded, RunOptions(**options)))


def _execute(run: Run, rest, transport) -> threading.Thread:
    failures: list[BaseException] = []

    def shard() -> None:
        try:
            runner.execute(run.id, transport=transport, rest=rest)
        except BaseException as error:  # noqa: BLE001 - the test reads it
            failures.append(error)

    thread = threading.Thread(target=shard, daemon=True)
    thread.failures = failures
    thread.start()
    return thread


def _aged(run: Run, seconds: float) -> None:
    then = timezone.now() - dt.timedelta(seconds=seconds)
    Run.objects.filter(pk=run.pk).update(created_at=then, phase_at=then)


@pytest.mark.django_db(transaction=True)
def test_the_rest_of_the_plan_is_stored_while_the_first_call_is_in_flight(small_batches):
    run, rest = _started()
    assert (run.plan_whole, run.answers.count()) == (False, 2)
    assert progress(run).total == ANSWERS  # counted whole while the rest is stored
    first = threading.Event()
    mock = MockLLM(hold=lambda call: not first.is_set() and not first.set())

    thread = _execute(run, rest, mock.transport)
    wait_until(lambda: mock.held == 1)  # the model's first call, alone, waits on the mock
    # stored meanwhile: on the old order the rest waited for this call, which waits for it
    wait_until(lambda: Run.objects.get(pk=run.pk).plan_whole, timeout=20)
    assert Answer.objects.filter(run=run).count() == ANSWERS
    mock.release.set()
    thread.join(60)

    assert not thread.is_alive() and not thread.failures
    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert set(run.answers.values_list("status", flat=True)) == {Call.Status.DONE}
    assert mock.count() == ANSWERS
    assert run.report["totals"]["answers"] == ANSWERS


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_plan_is_not_whole_does_not_move_on_when_its_stored_answers_are_done(
    small_batches,
):
    run, _rest = _started()
    run.mark_running()
    run.answers.update(status=Call.Status.DONE, text="ok")

    assert phases.answers_over(run.id, None) is None
    assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING


@pytest.mark.django_db(transaction=True)
def test_a_rest_that_cannot_be_stored_fails_the_run_saying_so_and_nothing_is_reported(
    small_batches, monkeypatch
):
    run, rest = _started()
    real, batches = planner.insert_each, []

    def insert_each(model, rows):
        batches.append(model)
        if len(batches) == 2:  # the rest's second batch: a full disk
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(model, rows)

    monkeypatch.setattr(planner, "insert_each", insert_each)
    thread = _execute(run, rest, MockLLM().transport)
    thread.join(60)

    assert not thread.is_alive()
    assert [type(error) for error in thread.failures] == [OSError]  # the command says it
    run.refresh_from_db()
    assert (run.status, run.report, run.plan_whole) == (Run.Status.FAILED, None, False)
    assert run.detail.startswith("its plan was not stored whole (4 of its answers were stored;")
    assert "No space left on device" in run.detail
    assert rest.store_next() is False  # nothing more is stored after a failure


@pytest.mark.django_db(transaction=True)
def test_the_sweep_fails_a_run_whose_process_stopped_storing_its_plan_and_queues_nothing(
    small_batches, monkeypatch
):
    sent = []
    monkeypatch.setattr(tasks, "async_task", lambda *args, **kwargs: sent.append(args))
    run, _rest = _started()  # and the process died: nobody stores the rest
    _aged(run, 2 * LEASE_S + 1)

    assert tasks.resume_stalled_runs() == []

    run.refresh_from_db()
    assert (sent, run.status, run.report) == ([], Run.Status.FAILED, None)
    assert run.detail.startswith("its plan was not stored whole (2 of its answers were stored;")
    assert "the process storing the rest stopped first" in run.detail
    assert run.detail.endswith("takes the answers this run finished from the cache)")


@pytest.mark.django_db(transaction=True)
def test_resume_refuses_a_run_whose_plan_is_not_whole(small_batches):
    run, _rest = _started()
    _aged(run, 2 * LEASE_S + 1)
    loaded = parse_suite(suite_text().encode(), filename="faults.yaml", origin="upload")

    with pytest.raises(ResumeRefused, match="before its plan was stored whole"):
        resume_run(run.id, loaded)


@pytest.mark.django_db(transaction=True)
def test_a_plan_no_bigger_than_the_first_answers_is_whole_at_once():
    run, rest = _started()  # 8 answers, FIRST_ANSWERS 512

    assert (rest, run.plan_whole, run.answers.count()) == (None, True, ANSWERS)


@pytest.mark.django_db(transaction=True)
def test_a_run_cancelled_before_its_first_call_still_stores_its_whole_plan(small_batches):
    # its partial report is of the whole plan: nothing was sent, every answer pending
    run, rest = _started()
    stop = Stop()
    stop.ask()

    run = execute_here(run, stop=stop, rest=rest)

    assert (run.status, run.plan_whole) == (Run.Status.CANCELLED, True)
    assert run.answers.filter(status=Call.Status.PENDING).count() == ANSWERS
    assert run.report is not None


@pytest.mark.django_db(transaction=True)
def test_a_no_look_run_stores_the_rest_of_its_plan_as_its_first_rows_without_case_data(
    small_batches,
):
    run, rest = _started(no_look=True)
    mock = MockLLM()

    thread = _execute(run, rest, mock.transport)
    thread.join(60)
    sealed.release(run.id)  # as execute_here does

    assert not thread.is_alive() and not thread.failures
    run.refresh_from_db()
    assert (run.status, run.plan_whole, mock.count()) == (Run.Status.DONE, True, ANSWERS)
    assert not any(a.request.get("messages") for a in run.answers.all())  # held here only


@pytest.mark.django_db(transaction=True)
def test_a_no_look_run_failed_so_does_not_promise_the_cache_it_never_wrote(small_batches):
    run, _rest = _started(no_look=True)
    sealed.release(run.id)

    assert run.fail_unstored_plan("the process storing the rest stopped first")
    assert run.detail.endswith("nothing more is asked for it: run the suite again")


@pytest.mark.django_db(transaction=True)
def test_a_run_asked_to_cancel_before_its_plan_was_whole_is_closed_as_cancelled(
    small_batches, monkeypatch
):
    # `timeout` sends its signal twice: the command wrote the cancel and left before its
    # shard stored the rest. What the member asked for is what the worker does.
    sent = []
    monkeypatch.setattr(tasks, "async_task", lambda *args, **kwargs: sent.append(args))
    run, _rest = _started()
    run.request_cancel()
    _aged(run, 2 * LEASE_S + 1)
    mock = MockLLM()

    assert tasks.resume_stalled_runs() == [run.id]
    for _, run_id, shards in sent:  # the worker that picks it up
        runner.execute(run_id, transport=mock.transport, shards=shards)

    run.refresh_from_db()
    assert (run.status, mock.count()) == (Run.Status.CANCELLED, 0)
    assert run.report is not None


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_calls_do_not_wait_stores_its_whole_plan_before_its_first_claim(
    small_batches, monkeypatch
):
    # --fake, scripted, given: no network wait to hide the storing behind, and spread
    # between the claims and writes it only took longer to be whole
    run, rest = _started(fake=True)
    whole_at_claims: list[bool] = []
    claim = runner.Claims.claim

    def claiming(self, limit):
        whole_at_claims.append(Run.objects.get(pk=run.pk).plan_whole)
        return claim(self, limit)

    monkeypatch.setattr(runner.Claims, "claim", claiming)

    runner.execute(run.id, rest=rest)

    run.refresh_from_db()
    assert (run.status, run.answers.filter(status=Call.Status.DONE).count()) == (
        Run.Status.DONE,
        ANSWERS,
    )
    assert whole_at_claims and all(whole_at_claims)
