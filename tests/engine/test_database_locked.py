"""SQLite briefly locked by another writer: the run waits (busy timeout) and finishes."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from django.db import connection
from django.utils import timezone

from runs.models import Answer, Run
from tests.helpers.engine import MockLLM, execute, mock_run, reply

pytestmark = pytest.mark.django_db(transaction=True)

LOCK_S = 1.0


@pytest.fixture
def sqlite_file():
    if connection.vendor != "sqlite":
        pytest.skip("a file lock is SQLite's; PostgreSQL locks rows")
    return str(connection.settings_dict["NAME"])


class WriteLock(threading.Thread):
    """Another process's writer: BEGIN IMMEDIATE on the database file for LOCK_S seconds."""

    def __init__(self, path: str):
        super().__init__(daemon=True)
        self.path = path
        self.start_now = threading.Event()
        self.locked = threading.Event()
        self.released_at = None
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self.start_now.wait(30)
            db = sqlite3.connect(self.path, timeout=20, isolation_level=None)
            db.execute("BEGIN IMMEDIATE")
            self.locked.set()
            time.sleep(LOCK_S)
            db.execute("COMMIT")
            self.released_at = timezone.now()
            db.close()
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.failure = error
            self.locked.set()


def test_a_run_finishes_while_another_writer_holds_the_lock_for_a_second(sqlite_file):
    run = mock_run(cases=4)
    lock = WriteLock(sqlite_file)
    lock.start()

    def respond(call):
        if call.attempt == 1 and not lock.start_now.is_set():
            lock.start_now.set()
            lock.locked.wait(5)  # the reply (and the write it causes) comes after the lock
        return reply(f"answer to {call.content}")

    mock = MockLLM(respond)

    started = time.monotonic()
    run = execute(run.id, mock.transport)
    lock.join(10)

    assert lock.failure is None and lock.released_at is not None
    assert time.monotonic() - started >= LOCK_S * 0.9  # the runner did wait for the lock
    assert run.status == Run.Status.DONE
    answers = Answer.objects.filter(run=run)
    assert set(answers.values_list("status", flat=True)) == {Answer.Status.DONE}
    assert answers.filter(finished_at__gte=lock.released_at).exists()
    assert mock.count() == 8 and set(mock.per_key().values()) == {1}
    assert run.reserved_usd == 0
