"""What the two sides of a pair were sent, for the pair page: the case's inputs and the
messages each contestant's prompt rendered to, by the engine's own rule
(:func:`evalsite.core.judging.sent_messages`, the judge's view of the task too). Shown once
when the two sides were sent the same, side by side when their variants differ."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from evalsite.core.judging import sent_messages
from evalsite.core.providers.base import message_media, message_text
from runs.models import Pair, Run

# A message longer than this (characters or lines) starts folded away.
LONG_CHARS = 800
LONG_LINES = 12


def is_long(text: str) -> bool:
    return len(text) > LONG_CHARS or text.count("\n") >= LONG_LINES


@dataclass(frozen=True)
class Message:
    role: str
    text: str
    files: int  # how many files the message sends beside its text

    @property
    def long(self) -> bool:
        return is_long(self.text)


@dataclass(frozen=True)
class Sent:
    inputs: list[tuple[str, str, bool]]  # the case's variables: name, text, whether long
    baseline: list[Message]
    candidate: list[Message]

    @property
    def same(self) -> bool:
        return self.baseline == self.candidate


def pair_sent(run: Run, pair: Pair) -> Sent | None:
    """What each side of ``pair`` was sent; None for a no-look run (nothing of its cases is
    kept) or a case its suite version no longer renders."""
    if run.no_look:
        return None
    suite = run.suite_version.core_suite()
    try:
        case = suite.task(pair.task_id).case(pair.case_id)
        sides = [
            sent_messages(suite, pair.task_id, pair.case_id, contestant)
            for contestant in (pair.baseline_contestant, pair.candidate_contestant)
        ]
    except ValueError:
        return None
    inputs = [(name, text, is_long(text)) for name, text in _texts(case.vars)]
    baseline, candidate = ([_message(m) for m in side] for side in sides)
    return Sent(inputs, baseline, candidate)


def _message(message: dict) -> Message:
    return Message(message["role"], message_text(message), len(message_media(message)))


def _texts(variables: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    for name, value in variables.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
        yield name, shown
