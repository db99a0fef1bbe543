"""The engine benchmark prints how fast the machine runs Python beside its figures
(bench/machine.py): the targets in seconds were set on a faster machine of the same kind."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def bench_modules(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    yield
    for name in ("machine", "printout", "paths", "results"):
        sys.modules.pop(name, None)


def test_the_reference_work_runs_and_is_timed(bench_modules):
    from machine import reference_cpu_s

    assert 0 < reference_cpu_s(runs=1) < 60


def test_the_heading_names_the_reference_reading(bench_modules):
    from printout import _heading

    config = {
        "date": "2026-12-05T03:00:00+00:00",
        "cpus": 2,
        "load_average": 0.4,
        "load_average_end": 0.6,
        "reference_cpu_s": 0.2345,
        "latency_ms": 200,
        "database": "sqlite3",
        "broker": "orm",
        "paths": ["cli"],
        "commit": "abc1234",
    }
    assert "reference work 0.23 s CPU (bench/machine.py)" in _heading(config)
