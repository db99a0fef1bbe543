"""What the report says of answers that are not what they seem (issue 26): refused by the
model or a provider's filter (an error of kind ``refused``, scored as a failure), cut off at
``max_tokens`` (kept and scored as they are), or never asked because an earlier call
stopped their model (``skipped``: a configuration error, a refused key, an unknown model).

Plain functions of the report's answer rows; :mod:`evalsite.core.report.build` calls them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from evalsite.core.judge_warnings import CUT_OFF_REASONS
from evalsite.core.providers.base import STOPS_MODEL, ErrorKind

__all__ = ["answer_counts", "answer_warnings"]

SKIPPED = "skipped"
MESSAGE_CHARS = 300


def answer_counts(answers: Iterable[Any]) -> dict[str, int]:
    """A contestant's refused and cut-off answers."""
    answers = list(answers)
    return {
        "refused": sum(1 for a in answers if a.error_kind == ErrorKind.REFUSED),
        "truncated": sum(1 for a in answers if _cut_off(a)),
    }


def answer_warnings(answers: Sequence[Any], contestants: Sequence[str]) -> list[str]:
    """Per contestant, one line each for its refusals, its cut-off answers and the answers
    not called because its model was stopped (naming the error that stopped it)."""
    lines = []
    for contestant in contestants:
        mine = [a for a in answers if a.contestant == contestant]
        counts = answer_counts(mine)
        if counts["refused"]:
            lines.append(
                f"{contestant}: {counts['refused']} of {len(mine)} answers refused "
                "(scored as failures)"
            )
        if counts["truncated"]:
            reasons = "/".join(sorted({a.finish_reason for a in mine if _cut_off(a)}))
            lines.append(
                f"{contestant}: {counts['truncated']} of {len(mine)} answers cut off at "
                f"max_tokens (finish reason {reasons}); kept and scored as they are"
            )
        skipped = sum(1 for a in mine if a.error_kind == SKIPPED)
        if skipped:
            lines.append(_stopped_line(contestant, skipped, answers))
    return lines


def _cut_off(answer: Any) -> bool:
    return answer.status == "done" and answer.finish_reason in CUT_OFF_REASONS


def _stopped_line(contestant: str, skipped: int, answers: Sequence[Any]) -> str:
    """The error that stopped the contestant's model: its own (any variant's), else a
    refused key's on another model of the same provider."""
    model = contestant.partition("@")[0]
    provider = model.partition("/")[0]
    stopping = [a for a in answers if a.error_kind in STOPS_MODEL]
    cause = next((a for a in stopping if a.contestant.partition("@")[0] == model), None)
    cause = cause or next((a for a in stopping if a.contestant.partition("/")[0] == provider), None)
    noun = "answer" if skipped == 1 else "answers"
    if cause is None:
        return f"{contestant}: stopped; {skipped} {noun} not called"
    message = cause.error_message[:MESSAGE_CHARS]
    return (
        f"{contestant}: stopped by a {cause.error_kind} error; {skipped} {noun} not called "
        f"(the run went on for the others): {message}"
    )
