"""Fixtures for the engine's fault tests (helpers: tests/helpers/engine.py, tests/helpers/cli.py)."""

from __future__ import annotations

from functools import partial

import pytest

from evalsite.core import pacing


@pytest.fixture
def fast_backoff(monkeypatch):
    """Exponential backoff with a 10 ms base: retries happen, the test stays fast.

    ``backoff_delay`` binds BACKOFF_BASE_S as a default argument, so patching the constant
    alone does not reach it; the runner's reference is wrapped instead. Retry-After is
    still honoured (the wrapper only changes the base).
    """
    monkeypatch.setattr(pacing, "BACKOFF_BASE_S", 0.01)
    monkeypatch.setattr(
        "runs.engine.runner.backoff_delay", partial(pacing.backoff_delay, base=0.01)
    )
