"""A run over HTTP gets its client ready (aiohttp imported, the CA bundle read) beside the
rest of its planning and storing, not after the run is marked running; a run that makes no
HTTP call, or a dry run, never loads it."""

from __future__ import annotations

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
