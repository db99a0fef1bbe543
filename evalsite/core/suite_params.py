"""Which of a suite's parameters each contestant and the judge is sent, and what the
validation says of the rest (docs/providers.md, "What each model is sent").

A contestant's parameters are the suite's ``defaults``, then the task's own, then its
variant's ``params`` (:func:`~evalsite.core.prompts.request_params`); the judge's are its
block's ``temperature`` (0 when unset) and ``max_tokens``. The model's parameter rules
(:func:`~evalsite.core.providers.capabilities.fit`) leave out what it does not take:

- a suite default or a task's parameter (set for every contestant) that a model does not
  take is left out of that model's requests, with one :class:`Note` per contestant and
  parameter (``validate`` and ``run --dry-run`` print them);
- a parameter set for that contestant alone (its variant's ``params``, the judge block's
  own) that its model does not take is an error at its key (:func:`parameter_problems`).

A thinking budget needs ``max_tokens`` above it wherever it applies, whichever model: the
reasoning counts toward the output limit at every provider.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from evalsite.core.judge_warnings import DEFAULT_JUDGE_MAX_TOKENS
from evalsite.core.problems import Path, format_path
from evalsite.core.prompts import request_params
from evalsite.core.providers.capabilities import fit

if TYPE_CHECKING:
    from evalsite.core.suites import Contestant, Suite

JUDGE_DEFAULT = "evalsite's judge default"


@dataclass(frozen=True)
class Note:
    """A parameter a contestant will not be sent, where it was set, and why."""

    contestant: str
    param: str
    value: Any
    where: str
    reason: str  # "openai/o3 takes no temperature other than 1"

    def __str__(self) -> str:
        return (
            f"{self.contestant} will not be sent {self.param} {shown(self.value)} "
            f"(set at {self.where}): {self.reason}"
        )


@dataclass(frozen=True)
class _Asked:
    """What one contestant (or the judge) asks of its model for one task."""

    label: str  # the contestant, or "judge (model)"
    model: str
    params: Mapping[str, Any]
    paths: Mapping[str, Path | None]  # None: evalsite's default
    explicit: frozenset[str]


def explicit_params(suite: Suite, contestant: Any) -> frozenset[str]:
    """The parameters set for this contestant alone: its variant's ``params``."""
    if contestant is None or contestant.variant is None:
        return frozenset()
    return frozenset(suite.variant(contestant.variant).params)


def judge_params(
    suite: Suite, default_max_tokens: int = DEFAULT_JUDGE_MAX_TOKENS
) -> tuple[dict[str, Any], frozenset[str]]:
    """The judge's parameters (temperature 0 unless its block sets one) and those its block
    sets itself."""
    judge = suite.judge
    own = {"temperature": judge.temperature, "max_tokens": judge.max_tokens} if judge else {}
    explicit = frozenset(key for key, value in own.items() if value is not None)
    params = {"temperature": 0, "max_tokens": default_max_tokens}
    return params | {key: own[key] for key in explicit}, explicit


def parameter_problems(
    suite: Suite, contestants: Sequence[str], judge_model: str | None = None
) -> list[tuple[Path, str]]:
    """(key path, error) for each parameter set for a contestant alone (or by the judge
    block) that its model does not take, and each thinking budget without ``max_tokens``
    above it."""
    found: dict[tuple[Path, str], None] = dict.fromkeys(_budget_problems(suite))
    for asked in _asked(suite, contestants, judge_model):
        for param, reason in fit(asked.model, asked.params, asked.explicit).left_out.items():
            path = asked.paths.get(param)
            if param in asked.explicit and path is not None:
                message = f"{asked.label}: {asked.model} {reason}; remove it or use another model"
                found[(path, message)] = None
    return list(found)


def parameter_notes(
    suite: Suite, contestants: Sequence[str], judge_model: str | None = None
) -> list[Note]:
    """One note per contestant (and the judge) and parameter the suite sets for everyone
    that its model will not be sent, in the order contestants and parameters come."""
    notes: dict[tuple[str, str], Note] = {}
    for asked in _asked(suite, contestants, judge_model):
        for param, reason in fit(asked.model, asked.params, asked.explicit).left_out.items():
            if param in asked.explicit or (asked.label, param) in notes:
                continue
            path = asked.paths.get(param)
            where = format_path(path) if path is not None else JUDGE_DEFAULT
            value = asked.params[param]
            note = Note(asked.label, param, value, where, f"{asked.model} {reason}")
            notes[(asked.label, param)] = note
    return list(notes.values())


def _asked(suite: Suite, contestants: Sequence[str], judge_model: str | None) -> Iterator[_Asked]:
    from evalsite.core.suites import parse_contestant  # suites imports this module

    for text in contestants:
        contestant = parse_contestant(text)
        if contestant.variant is not None and contestant.variant not in suite.variant_specs:
            continue  # an unknown variant is reported where it is named
        explicit = explicit_params(suite, contestant)
        for index, task in enumerate(suite.tasks):
            params = request_params(suite, task.id, contestant)
            paths = _paths(suite, index, contestant.variant)
            yield _Asked(str(contestant), contestant.model, params, paths, explicit)
    if judge_model:
        params, explicit = judge_params(suite)
        judge_paths: dict[str, Path | None] = {
            key: ("judge", key) if key in explicit else None for key in params
        }
        yield _Asked(f"the judge {judge_model}", judge_model, params, judge_paths, explicit)


def _paths(suite: Suite, index: int, variant: str | None) -> dict[str, Path]:
    """Where each of a task's parameters for ``variant`` is set: the last layer wins."""
    paths: dict[str, Path] = {key: ("defaults", key) for key in suite.defaults}
    paths |= {key: ("tasks", index, key) for key in suite.tasks[index].params}
    if variant is not None:
        paths |= {
            key: ("variants", variant, "params", key) for key in suite.variant(variant).params
        }
    return paths


def _budget_problems(suite: Suite) -> Iterator[tuple[Path, str]]:
    """A thinking budget needs max_tokens above it, for the tasks as written and for every
    variant (the thinking counts toward the output limit)."""
    for index, task in enumerate(suite.tasks):
        for variant in (None, *suite.variant_specs):
            contestant = cast("Contestant", _Variant(variant))  # request_params reads .variant
            params = request_params(suite, task.id, contestant)
            thinking = params.get("thinking")
            budget = thinking.get("budget_tokens") if isinstance(thinking, Mapping) else None
            if not isinstance(budget, int):
                continue
            limit = params.get("max_tokens")
            if isinstance(limit, int) and limit > budget:
                continue
            paths = _paths(suite, index, variant)
            have = (
                f"max_tokens is {limit} (at {format_path(paths['max_tokens'])})"
                if isinstance(limit, int)
                else "set max_tokens"
            )
            message = (
                f"thinking.budget_tokens {budget} needs max_tokens above it (the thinking "
                f"counts toward the output limit); {have}"
            )
            yield (*paths["thinking"], "budget_tokens"), message


@dataclass(frozen=True)
class _Variant:
    """A contestant of no particular model: what request_params reads."""

    variant: str | None


def shown(value: Any) -> str:
    """A parameter's value as a note or the report shows it: a list as JSON."""
    if isinstance(value, list | tuple):
        return json.dumps(list(value), ensure_ascii=False)
    if isinstance(value, Mapping):
        return ", ".join(f"{key} {item}" for key, item in value.items())
    return str(value)
