"""Pass/fail of one answer, and the pure aggregates over answers (SPEC §7.4, §7.5).

An answer **passes** when its schema verdict is ``pass`` or ``not_applicable``, its
deterministic checks all pass, its execution check, if it has one, passes, and its weighted
match, if its task has one, passes. An
execution check that errored (setup failed, no sandbox) is not a pass: the answer was not
shown to work. An answer with a provider error has no verdicts and never passes; the
caller counts it as not passed.

With ``repeats: k`` each (case, contestant) has k booleans: **pass^k** when all k passed,
**pass@k** when at least one did. Per contestant the rates are over cases: the share of
cases that pass^k and that pass@k, and beside them the share of single answers that
passed. Per-tag pass rates count answers (every repeat is one), and a tag whose rate is
below :data:`TAG_FLOOR` is flagged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "ContestantRates", "RepeatStats", "TAG_FLOOR", "TagRate", "answer_passed", "answer_tags",
    "contestant_rates", "repeat_stats", "tag_rates",
]  # fmt: skip

TAG_FLOOR = 0.70
_SCHEMA_OK = ("pass", "not_applicable")


def answer_passed(
    schema: str, checks_passed: bool, execution: str | None = None, match: bool | None = None
) -> bool:
    """``schema``: the schema verdict; ``execution``: the execution verdict, None if the
    case has no execution check; ``match``: the weighted match's pass, None if the task has
    no weighted match."""
    return (
        schema in _SCHEMA_OK
        and checks_passed
        and execution in (None, "pass")
        and match is not False
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


@dataclass(frozen=True)
class ContestantRates:
    contestant: str
    cases: int
    pass_all: int  # cases where every repeat passed
    pass_any: int  # cases where at least one repeat passed
    answers: int
    answers_passed: int

    @property
    def pass_all_rate(self) -> float:  # pass^k rate
        return self.pass_all / self.cases

    @property
    def pass_any_rate(self) -> float:  # pass@k rate
        return self.pass_any / self.cases

    @property
    def answer_rate(self) -> float:
        return self.answers_passed / self.answers


def contestant_rates(
    outcomes: Mapping[tuple[Hashable, str], Sequence[bool]],
) -> dict[str, ContestantRates]:
    """Per contestant, from ``{(case_key, contestant): [passed per repeat]}``."""
    grouped: dict[str, list[RepeatStats]] = defaultdict(list)
    for (_, contestant), passes in outcomes.items():
        grouped[contestant].append(repeat_stats(passes))
    return {
        contestant: ContestantRates(
            contestant,
            cases=len(stats),
            pass_all=sum(s.pass_all for s in stats),
            pass_any=sum(s.pass_any for s in stats),
            answers=sum(s.k for s in stats),
            answers_passed=sum(s.passed for s in stats),
        )
        for contestant, stats in grouped.items()
    }


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
