"""Pass/fail of one answer, and the pure aggregates over answers (SPEC §7.4, §7.5).

An answer **passes** (a passed attempt) when its schema verdict is ``pass`` or
``not_applicable``, its deterministic checks all pass, its execution check, if it has one,
passes, its weighted match, if its task has one, passes, and its grade, if its case is
graded, passes. :func:`answer_passed` is that rule, written once: the stored ``passed`` of an
answer, the per-case diff, pass^k, McNemar, the matrix, the answers export and every pass
rate read it. An execution check that errored (setup failed, no sandbox) is not a pass: the
answer was not shown to work; a graded answer with no usable grade (yet) is not a pass
either. An answer with a provider error has no verdicts and never passes; the caller counts
it as not passed.

With ``repeats: k`` each (case, contestant) has up to k booleans. A case with n attempts,
c of them passed, gets the unbiased estimates of the chance that k attempts drawn from its
n all pass (**pass^k** = C(c, k)/C(n, k)) and that at least one does (**pass@k** =
1 − C(n−c, k)/C(n, k)); with n = k they are 1 when all k passed, resp. any did. A case with
fewer than k attempts (a stopped run) has no estimate: it is left out and counted
(``short``), never taken for k attempts. Per contestant the rates are the mean estimate over
the cases that have one, with a bootstrap interval over cases, and beside them
the share of single answers that passed. Per-tag pass rates count answers (every repeat is
one), and a tag whose rate is below :data:`TAG_FLOOR` is flagged.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "ContestantRates", "RepeatStats", "TAG_FLOOR", "TagRate",
    "answer_passed", "answer_tags", "cases_text", "contestant_rates", "pass_at_k", "pass_hat_k",
    "repeat_stats", "tag_rates",
]  # fmt: skip

TAG_FLOOR = 0.70
_SCHEMA_OK = ("pass", "not_applicable")


def answer_passed(
    schema: str,
    checks_passed: bool | None,
    execution: str | None = None,
    match: bool | None = None,
    *,
    graded: bool = False,
    grade: bool | None = None,
) -> bool:
    """Whether one attempt passed. ``schema``: the schema verdict (empty for an answer that
    errored or was not scored); ``execution``: the execution verdict, None or empty if the
    case has no execution check; ``match``: the weighted match's pass, None if the task has
    no weighted match; ``graded``: whether the case is graded, and ``grade`` its grade's pass
    (None: no usable grade, or none yet)."""
    return bool(
        schema in _SCHEMA_OK
        and checks_passed is True
        and execution in (None, "", "pass")
        and match is not False
        and (grade is True or not graded)
    )


@dataclass(frozen=True)
class RepeatStats:
    """One (case, contestant): ``k`` answers, ``passed`` of them passed."""

    k: int
    passed: int

    @property
    def pass_all(self) -> bool:  # pass^k
        return self.passed == self.k

    @property
    def pass_any(self) -> bool:  # pass@k
        return self.passed > 0


def repeat_stats(passes: Sequence[bool]) -> RepeatStats:
    """pass^k and pass@k of one (case, contestant); ValueError for no answers at all."""
    if not passes:
        raise ValueError("pass^k and pass@k need at least one answer")
    return RepeatStats(len(passes), sum(1 for passed in passes if passed))


def pass_hat_k(attempts: int, passed: int, k: int) -> float | None:
    """pass^k of a case with ``passed`` of ``attempts``: C(c, k)/C(n, k), the share of its
    k-attempt subsets that all pass; None with fewer than k attempts."""
    return None if attempts < k else math.comb(passed, k) / math.comb(attempts, k)


def pass_at_k(attempts: int, passed: int, k: int) -> float | None:
    """pass@k: 1 − C(n−c, k)/C(n, k), the share of k-attempt subsets with a pass (Chen et
    al., 2021); None with fewer than k attempts."""
    if attempts < k:
        return None
    return 1 - math.comb(attempts - passed, k) / math.comb(attempts, k)


@dataclass(frozen=True)
class ContestantRates:
    contestant: str
    cases: int
    pass_all: float  # summed pass^k estimates: the cases that passed all k, when each has k
    pass_any: float  # summed pass@k estimates
    answers: int
    answers_passed: int
    k: int = 1
    short: int = 0  # cases with fewer than k attempts: no estimate, left out
    all_estimates: tuple[float, ...] = ()  # per case with an estimate
    any_estimates: tuple[float, ...] = ()

    @property
    def estimated(self) -> int:
        return self.cases - self.short

    @property
    def pass_all_rate(self) -> float | None:  # pass^k rate
        return self.pass_all / self.estimated if self.estimated else None

    @property
    def pass_any_rate(self) -> float | None:  # pass@k rate
        return self.pass_any / self.estimated if self.estimated else None


def contestant_rates(
    outcomes: Mapping[tuple[Hashable, str], Sequence[bool]], k: int | None = None
) -> dict[str, ContestantRates]:
    """Per contestant, from ``{(case_key, contestant): [passed per attempt]}``, with k the
    attempts a case should have (the suite's repeats; without it, the contestant's most
    attempts at a case)."""
    grouped: dict[str, list[RepeatStats]] = defaultdict(list)
    for (_, contestant), passes in outcomes.items():
        grouped[contestant].append(repeat_stats(passes))
    return {contestant: _rates(contestant, stats, k) for contestant, stats in grouped.items()}


def _rates(contestant: str, stats: list[RepeatStats], k: int | None) -> ContestantRates:
    k = k or max(s.k for s in stats)
    full = [s for s in stats if s.k >= k]
    every = tuple(pass_hat_k(s.k, s.passed, k) or 0.0 for s in full)
    some = tuple(pass_at_k(s.k, s.passed, k) or 0.0 for s in full)
    return ContestantRates(
        contestant,
        cases=len(stats),
        pass_all=math.fsum(every),
        pass_any=math.fsum(some),
        answers=sum(s.k for s in stats),
        answers_passed=sum(s.passed for s in stats),
        k=k,
        short=len(stats) - len(full),
        all_estimates=every,
        any_estimates=some,
    )


def cases_text(n: int) -> str:
    return f"{n} case" if n == 1 else f"{n} cases"


@dataclass(frozen=True)
class TagRate:
    tag: str
    n: int
    passed: int
    rate: float
    flagged: bool


def tag_rates(
    answers: Iterable[tuple[Iterable[str], bool]], floor: float = TAG_FLOOR
) -> list[TagRate]:
    """Pass rate per tag from (tags, passed) per answer, sorted by tag; a tag below
    ``floor`` is flagged. An answer with a tag twice counts once for it."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for tags, passed in answers:
        for tag in set(tags):
            counts[tag][0] += 1
            counts[tag][1] += bool(passed)
    return [
        TagRate(tag, n, passed, passed / n, passed / n < floor)
        for tag, (n, passed) in sorted(counts.items())
    ]


def answer_tags(task_tags: Sequence[str], case_tags: Sequence[str]) -> tuple[str, ...]:
    """An answer's tags: its task's, then its case's, each once."""
    return tuple(dict.fromkeys([*task_tags, *case_tags]))
