"""Warnings about a judge that can bias or starve its own verdicts (evalblink's mitigations).

- **Self-preference**: a judge tends to prefer answers written by models of its own vendor
  (10–25% in the literature evalblink cites). :func:`vendor` reads the vendor from a model
  string: the provider part (``anthropic/claude-…`` → ``anthropic``), or for a router
  (``openrouter/anthropic/claude-…``) the segment after it. Keyless providers (fake,
  scripted, command, given) and a router model without a vendor segment (``openrouter/auto``)
  have no known vendor and never match.
- **A starved judge**: the judge answers in JSON, reasoning first, so a budget too small for
  the reasoning cuts the reply off before its verdict. :data:`JUDGE_MAX_TOKENS_FLOOR` is the
  documented floor (see its comment); a cut-off reply with no usable verdict is counted by
  the report (:func:`cut_off_warning`).

Plain functions of model strings and numbers; the validation and the report both call them.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "CUT_OFF_REASONS", "DEFAULT_JUDGE_MAX_TOKENS", "JUDGE_MAX_TOKENS_FLOOR", "budget_warning",
    "cut_off_warning", "judge_is_contestant_warning", "same_vendor", "self_preference_warning",
    "vendor",
]  # fmt: skip

ROUTERS = ("openrouter",)
NO_VENDOR = ("fake", "scripted", "command", "given")

# Both judge reply formats are a JSON object with "a few sentences" of reasoning first and a
# verdict last ({"reason", "winner"} or {"reasoning", "score"}): about 4 sentences of ~25
# tokens plus ~20 of JSON, ~120 tokens. The floor doubles that, for wordier judges and
# tokenizers that split more finely; below it the verdict is the part most likely cut off.
# (Models that think before answering spend far more, often thousands: the floor is a
# minimum, not a recommendation.)
JUDGE_MAX_TOKENS_FLOOR = 256
DEFAULT_JUDGE_MAX_TOKENS = 400  # a judge call's max_tokens when the suite sets none

# What providers say when a reply stopped at max_tokens: OpenAI-compatible, Anthropic, Google.
# Anthropic's model_context_window_exceeded: the answer stopped at the context window.
CUT_OFF_REASONS = ("length", "max_tokens", "MAX_TOKENS", "model_context_window_exceeded")


def vendor(model: str) -> str | None:
    """The vendor whose model ``model`` names (a contestant's ``@variant`` is ignored), or
    None when it cannot be told."""
    provider, _, name = model.partition("@")[0].partition("/")
    provider = provider.lower()
    if provider in NO_VENDOR or not name:
        return None
    if provider in ROUTERS:
        routed, slash, rest = name.partition("/")
        return routed.lower() if slash and rest else None
    return provider


def same_vendor(judge: str, contestants: Iterable[str]) -> tuple[str | None, list[str]]:
    """(the judge's vendor, the contestants of that vendor whose model is not the judge's
    own: a judge that is itself a contestant is said by :func:`judge_is_contestant_warning`
    and the report's ``judge.is_contestant``, not twice)."""
    own = vendor(judge)
    if own is None:
        return None, []
    judge_model = judge.partition("@")[0]
    sharing = [
        c
        for c in dict.fromkeys(contestants)
        if vendor(c) == own and c.partition("@")[0] != judge_model
    ]
    return own, sharing


def self_preference_warning(judge: str, contestants: Iterable[str]) -> str | None:
    """The warning when the judge shares its vendor with any other contestant, else None."""
    own, sharing = same_vendor(judge, contestants)
    if not sharing:
        return None
    noun = "contestant" if len(sharing) == 1 else "contestants"
    return (
        f"the judge {judge} shares its vendor ({own}) with {noun} {', '.join(sharing)}: it may "
        "prefer its own vendor's answers (self-preference bias, 10-25%); a judge from another "
        "vendor avoids it"
    )


def judge_is_contestant_warning(judge: str, contestants: Iterable[str]) -> str | None:
    """The warning when the judge's model is itself a contestant (it grades its own answers)."""
    own = [c for c in dict.fromkeys(contestants) if c.partition("@")[0] == judge]
    if not own:
        return None
    return (
        f"the judge {judge} is also a contestant ({', '.join(own)}): it judges its own answers "
        "(self-preference bias)"
    )


def budget_warning(max_tokens: int | None) -> str | None:
    """The warning when a judge's ``max_tokens`` is set below the floor, else None."""
    if max_tokens is None or max_tokens >= JUDGE_MAX_TOKENS_FLOOR:
        return None
    return (
        f"judge.max_tokens is {max_tokens}, below the {JUDGE_MAX_TOKENS_FLOOR} tokens the "
        "judge's reply needs (its reasoning comes before the verdict): replies cut off there "
        f"have no verdict; raise it to {JUDGE_MAX_TOKENS_FLOOR} or more"
    )


def cut_off_warning(count: int, max_tokens: int) -> str | None:
    """The report's warning for judge replies cut off by the budget with no usable verdict."""
    if count <= 0:
        return None
    replies = "judge reply was" if count == 1 else "judge replies were"
    return (
        f"{count} {replies} cut off at max_tokens={max_tokens} with no usable verdict or "
        "score; raise judge.max_tokens"
    )
