"""execute_here: a run executed in this process (`evalsite run`, MCP, `pairs judge`) releases
a no-look run's case data however it ends, and a stop asked before it starts cancels it.
It returns when the run's shard ends, not at its next poll (issue 31: up to 0.2 s of every
`evalsite run`)."""

from __future__ import annotations

import threading

import pytest

from evalsite.core.suites import load_suite
from runs import sealed
from runs.engine import local, runner
from runs.engine.local import Stop, execute_here
from runs.models import Run, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan
from tests.helpers.factories import write_no_look_suite

pytestmark = pytest.mark.django_db(transaction=True)  # the run executes on a thread


@pytest.fixture
def no_look_run(tmp_path) -> Run:
    path = write_no_look_suite(tmp_path)
    loaded = load_suite(path)
    version, _ = SuiteVersion.objects.register_file(path, loaded)
    run = store_plan(make_plan(version, loaded, RunOptions()))
    assert sealed.held(run.id) is not None
    return run


def test_a_no_look_runs_case_data_is_released_when_the_run_raises(no_look_run, monkeypatch):
    def broken(run_id, **kwargs):
        raise RuntimeError("the shard broke")

    monkeypatch.setattr(local, "execute", broken)

    with pytest.raises(RuntimeError, match="the shard broke"):
        execute_here(no_look_run)

    assert sealed.held(no_look_run.id) is None


def test_a_no_look_runs_case_data_is_released_when_it_ends(no_look_run):
    seen = []

    run = execute_here(no_look_run, on_progress=seen.append, poll_s=0.01)

    assert run.status == Run.Status.DONE
    assert sealed.held(run.id) is None


def test_a_stop_asked_before_the_run_starts_cancels_it_before_anything_is_sent(no_look_run):
    stop = Stop()
    stop.ask()

    run = execute_here(no_look_run, stop=stop)

    assert stop.written
    assert run.status == Run.Status.CANCELLED
    assert not run.answers.filter(status="done").exists()
    assert sealed.held(run.id) is None


class Woken(threading.Event):
    """A stop's woken event that notes how each wait ended (True: it was set), and lets the
    shard end only once execute_here waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = threading.Event()
        self.ends: list[bool] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.set()
        woke = super().wait(timeout)
        self.ends.append(woke)
        return woke


def test_the_run_is_returned_when_its_shard_ends_not_at_the_next_poll(no_look_run, monkeypatch):
    stop = Stop()
    stop.woken = woken = Woken()

    def ends_once_waited_for(run_id, **kwargs):
        woken.waited.wait(60)  # without the wake, nothing waits on it: go on after a minute

    monkeypatch.setattr(local, "execute", ends_once_waited_for)

    execute_here(no_look_run, stop=stop, poll_s=60)

    assert woken.ends == [True]  # the one wait ended by the shard's end, not its minute
    assert sealed.held(no_look_run.id) is None


def test_what_a_run_uses_after_its_answers_is_imported_beside_them(no_look_run, monkeypatch):
    """The report's modules and numpy are not imported at start-up (runs.engine.later):
    the shard imports them on a thread of its own once its first calls are claimed (not
    before the first call, where they took the interpreter from the run's start-up), and
    execute_here returns once that thread is done."""
    importing: list[tuple[threading.Thread, bool]] = []
    claimed = threading.Event()

    def import_module(name):
        assert name == "tests.engine.later_stand_in"
        importing.append((threading.current_thread(), claimed.is_set()))

    monkeypatch.setattr(runner, "LATER", "tests.engine.later_stand_in")
    monkeypatch.setattr(runner.importlib, "import_module", import_module)
    claim = runner.Shard._claim_calls

    async def claiming(self, *args, **kwargs):
        tasks = await claim(self, *args, **kwargs)
        claimed.set()
        return tasks

    monkeypatch.setattr(runner.Shard, "_claim_calls", claiming)

    run = execute_here(no_look_run)

    assert run.status == Run.Status.DONE
    [(thread, after_the_first_claim)] = importing
    assert after_the_first_claim
    assert thread.name == "import-tests.engine.later_stand_in" and not thread.is_alive()


def test_a_module_imported_already_is_not_imported_again(no_look_run, monkeypatch):
    monkeypatch.setattr(runner, "LATER", "json")
    monkeypatch.setattr(runner.importlib, "import_module", lambda name: pytest.fail(name))

    assert execute_here(no_look_run).status == Run.Status.DONE
