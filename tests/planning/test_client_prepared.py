"""A run over HTTP gets its client ready (aiohttp imported, the CA bundle read) beside the
rest of its planning and storing, not after the run is marked running; a run that makes no
HTTP call, or a dry run, never loads it."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from evalsite.core.providers import http_clients
from tests.helpers.engine import mock_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def prepared(monkeypatch):
    """The threads prepare_client ran on, with the process's client forgotten first."""
    threads: list[str] = []
    done = threading.Event()

    def prepare() -> None:
        threads.append(threading.current_thread().name)
        done.set()

    monkeypatch.setattr(http_clients, "prepare_client", prepare)
    http_clients.aiohttp_module.cache_clear()
    http_clients.tls_context.cache_clear()
    return threads, done


def test_planning_a_run_over_http_prepares_the_client_on_a_thread_of_its_own(prepared):
    threads, done = prepared
    mock_run()

    assert done.wait(10)
    assert threads == ["prepare-client"]


@pytest.mark.parametrize("options", [{"dry_run": True}, {"fake": True}], ids=["dry", "fake"])
def test_a_dry_run_or_a_run_with_no_http_call_does_not(prepared, options):
    threads, done = prepared
    mock_run(**options)

    assert not done.wait(0.5)
    assert threads == []


EXITS_WHILE_PREPARING = """
import sys, time
from pathlib import Path
from evalsite.core.providers import http_clients

def prepare():
    time.sleep(0.5)  # still importing aiohttp when the caller is done
    Path(sys.argv[1]).write_text("prepared")

http_clients.prepare_client = prepare
http_clients.prepare_client_soon()
"""


def test_a_process_that_ends_while_the_client_is_prepared_waits_for_it(tmp_path):
    """A process that plans and ends at once (a refused run, a script that only queues one)
    must not tear the interpreter down under a thread still importing aiohttp: done so, one
    planning subprocess in about a hundred died of SIGSEGV at exit (make test, 2026-12-05)."""
    marker = tmp_path / "prepared"
    result = subprocess.run(
        [sys.executable, "-c", EXITS_WHILE_PREPARING, str(marker)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert marker.read_text() == "prepared"
