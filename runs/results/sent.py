"""What the two sides of a pair were sent, for the pair page: the case's inputs and the
messages each contestant's prompt rendered to, by the engine's own rule
(:func:`evalsite.core.judging.sent_messages`, the judge's view of the task too). Shown once
when the two sides were sent the same, side by side when their variants differ."""

from __future__ import annotations

import json
from dataclasses import dataclass

from evalsite.core.judging import sent_messages
from evalsite.core.providers.base import message_media, message_text
from runs.models import Pair, Run

# A message longer than this (characters or lines) starts folded away.
LONG_CHARS = 800
LONG_LINES = 12


@dataclass(frozen=True)
class Message:
    role: str
    text: str
    files: int  # how many files the message sends beside its text

    @property
    def long(self) -> bool:
        return len(self.text) > LONG_CHARS or self.text.count("\n") >= LONG_LINES


@dataclass(frozen=True)
class Sent:
    inputs: list[tuple[str, str]]  # the case's variables by name, as text
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
    inputs = [(name, _shown(value)) for name, value in case.vars.items()]
    baseline, candidate = ([_message(m) for m in side] for side in sides)
    return Sent(inputs, baseline, candidate)


def _message(message: dict) -> Message:
    return Message(message["role"], message_text(message), len(message_media(message)))


def _shown(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=1)
