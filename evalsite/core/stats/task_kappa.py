"""Kappa per task, each with its interval over cases and a Holm-corrected test against the
floor (SPEC §9)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from evalsite.core.stats.kappa import case_interval, cohen_kappa, kappa_band
from evalsite.core.stats.multiple import ONE_SIDED_ALPHA, holm
from evalsite.core.stats.record import Record
from evalsite.core.stats.student import t_below

MIN_N_PER_TASK = 5


@dataclass(frozen=True)
class TaskKappa(Record):
    task: str
    n: int
    agreement: float | None
    kappa: float | None  # None below the minimum n (low_n) or when undefined
    band: str | None
    low_n: bool
    cases: int = 0  # the labels' cases: a case's repeats are one
    ci: tuple[float, float] | None = None  # over cases (case_interval); None: see no_interval
    no_interval: str | None = None
    p_value: float | None = None  # one-sided, of "at or above the floor"; None: not tested
    p_holm: float | None = None  # Holm-adjusted over every task tested
    below_floor: bool | None = None  # p_holm below ONE_SIDED_ALPHA; None: not tested


def per_task_kappa(
    rows: Iterable[tuple[str, ...]],
    *,
    min_n: int = MIN_N_PER_TASK,
    floor: float | None = None,
    weights: Sequence[float] | None = None,
) -> list[TaskKappa]:
    """Kappa per task from (task, human, judge[, case]) rows, worst first.

    A task with fewer than ``min_n`` rows shows agreement only, flagged ``low_n``. Tasks with
    a kappa come first, lowest kappa first; then the rest, lowest agreement first. Each kappa
    has its interval over cases (:func:`case_interval`; each row its own case without one).
    With a ``floor`` every task with a standard error is one test of "its kappa is at or
    above the floor" (one-sided, t on cases − 1 degrees of freedom), the tests are one
    family Holm-corrected (:func:`~evalsite.core.stats.multiple.holm`), and a task is
    ``below_floor`` only when its adjusted p is below
    :data:`~evalsite.core.stats.multiple.ONE_SIDED_ALPHA`: one task in forty would look
    below the floor by chance. With ``weights`` (one a row, in their order) each task's kappa,
    agreement and interval are weighted (:mod:`evalsite.core.stats.kappa`); ``n`` and
    ``min_n`` count rows.
    """
    rows = list(rows)
    each = [1.0] * len(rows) if weights is None else weights
    grouped: dict[str, _Rows] = defaultdict(_Rows)
    for (task, human, judge, *case), weight in zip(rows, each, strict=True):
        mine = grouped[task]
        mine.humans.append(human)
        mine.judges.append(judge)
        mine.cases.append(case[0] if case else f"{task}\x00{len(mine.cases)}")
        mine.weights.append(weight)
    tasks = []
    for task, mine in grouped.items():
        humans, judges, cases = mine.humans, mine.judges, mine.cases
        w = None if weights is None else mine.weights
        result = cohen_kappa(humans, judges, weights=w)
        low_n = result.n < min_n
        kappa = None if low_n else result.kappa
        interval = case_interval(humans, judges, cases, weights=w)
        figure = TaskKappa(task, result.n, result.agreement, kappa, kappa_band(kappa), low_n,
                           interval.cases)  # fmt: skip
        if kappa is not None:
            figure = replace(figure, ci=interval.ci, no_interval=interval.why_none)
            if floor is not None and interval.se:
                statistic = (kappa - floor) / interval.se
                figure = replace(figure, p_value=t_below(statistic, interval.cases - 1))
        tasks.append(figure)
    adjusted = holm([task.p_value for task in tasks])
    tasks = [
        task if p is None else replace(task, p_holm=p, below_floor=p < ONE_SIDED_ALPHA)
        for task, p in zip(tasks, adjusted, strict=True)
    ]
    return sorted(tasks, key=_worst_first)


@dataclass
class _Rows:
    humans: list[str] = field(default_factory=list)
    judges: list[str] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)


def _worst_first(task: TaskKappa) -> tuple[bool, float, float, str]:
    return (task.kappa is None, task.kappa or 0.0, task.agreement or 0.0, task.task)
