"""How often `evalsite run` counts its run's calls for the progress it prints: counting
takes a query over every call of the run, on the process the shard shares."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from runs.management.commands import run as command


class Clock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def counted(monkeypatch):
    """The clock the printer reads, and the times progress() was asked for a count (each
    count takes `clock.takes` seconds)."""
    clock, times = Clock(), []
    clock.takes = 0.0

    def progress(run):
        times.append(clock.now)
        clock.now += clock.takes
        return SimpleNamespace(total=0)  # nothing printed: only the counting is watched

    monkeypatch.setattr(command, "time", clock)
    monkeypatch.setattr(command, "progress", progress)
    return clock, times


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def poll_for(printer, clock, seconds: float, every: float = 0.25) -> None:
    """execute_here's polls (every 0.2 s; 0.25 here, which sums exactly): one every `every`
    seconds for `seconds`."""
    end = clock.now + seconds
    while clock.now < end - 1e-9:
        printer.poll(None)
        clock.now += every


def test_plain_lines_count_the_calls_once_a_second_not_at_every_poll(counted):
    clock, times = counted
    poll_for(command.ProgressPrinter(io.StringIO(), quiet=False), clock, 3.0)

    assert times == pytest.approx([0.0, 1.0, 2.0])


def test_a_bar_on_a_terminal_counts_at_every_poll(counted):
    clock, times = counted
    poll_for(command.ProgressPrinter(Terminal(), quiet=False), clock, 1.0)

    assert times == [0.0, 0.25, 0.5, 0.75]


def test_a_slow_count_is_taken_at_most_a_twentieth_of_the_time(counted):
    clock, times = counted
    clock.takes = 0.25  # a run of many calls
    poll_for(command.ProgressPrinter(Terminal(), quiet=False), clock, 12.0)

    assert len(times) == 3  # at 0, 5 and 10 s: 0.25 s of counting in every 5 s
    assert times[1] - times[0] == pytest.approx(5.0, abs=0.2)


def test_a_quiet_run_never_counts(counted):
    clock, times = counted
    poll_for(command.ProgressPrinter(Terminal(), quiet=True), clock, 1.0)

    assert times == []
