"""Which media each model accepts: the capability table, kept beside the adapters that
translate the parts (a model's price and what its API takes change at different times, and
the adapter is what decides the wire format).

Rows are (provider, model glob, {kind: media types}), the first match wins, so narrower
globs come first. ``"*"`` as the media types means every type of that kind evalsite sends.
A model no row matches is *unknown*: evalsite does not refuse it (the provider decides at
the first call) but says so at validation. The fake, scripted, command and given providers
accept every part. An OpenRouter model (``openrouter/<vendor>/<model>``) takes what its
vendor's model takes, less video (OpenRouter forwards no video input).

Sources: Anthropic's vision and PDF support pages (images: JPEG, PNG, GIF, WebP; documents:
PDF and plain text; no audio or video); OpenAI's image, audio (``input_audio``: wav and
mp3, on the audio models only) and file-input (PDF) guides; Gemini's inline data
(images, PDF and plain text, audio but M4A, video).
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from evalsite.core.media import KIND_NAMES, MEDIA_TYPES
from evalsite.core.suite_schema import EFFORTS, MAX_TOKENS

ALL = "*"
_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_VISION = {"image": _IMAGES, "file": frozenset({"application/pdf"})}
TEXT_ONLY: Mapping[str, frozenset[str]] = {}
# Gemini's audio guide: WAV, MP3, AIFF, AAC, OGG, FLAC (no M4A)
_GEMINI_AUDIO = frozenset({"audio/wav", "audio/mpeg", "audio/ogg", "audio/flac"})

TABLE: tuple[tuple[str, str, Mapping[str, frozenset[str] | str]], ...] = (
    ("anthropic", "claude-instant*", TEXT_ONLY),
    ("anthropic", "claude-2*", TEXT_ONLY),
    ("anthropic", "claude-*", {"image": _IMAGES, "file": ALL}),
    ("openai", "gpt-4o-audio*", {"audio": frozenset({"audio/wav", "audio/mpeg"})}),
    ("openai", "gpt-4o-mini-audio*", {"audio": frozenset({"audio/wav", "audio/mpeg"})}),
    ("openai", "gpt-audio*", {"audio": frozenset({"audio/wav", "audio/mpeg"})}),
    ("openai", "gpt-3.5*", TEXT_ONLY),
    ("openai", "gpt-4-turbo*", {"image": _IMAGES}),
    ("openai", "gpt-4", TEXT_ONLY),
    ("openai", "gpt-4-0*", TEXT_ONLY),
    ("openai", "o1-mini*", TEXT_ONLY),
    ("openai", "o3-mini*", TEXT_ONLY),
    ("openai", "gpt-4o*", _VISION),
    ("openai", "gpt-4.1*", _VISION),
    ("openai", "gpt-4.5*", _VISION),
    ("openai", "gpt-5*", _VISION),
    ("openai", "o1*", _VISION),
    ("openai", "o3*", _VISION),
    ("openai", "o4*", _VISION),
    ("google", "gemini-*", {"image": _IMAGES, "file": ALL, "audio": _GEMINI_AUDIO, "video": ALL}),
    ("google", "gemma-*", TEXT_ONLY),
)
EVERYTHING = ("fake", "scripted", "command", "given")


def accepts(model: str, kind: str, media_type: str) -> bool | None:
    """Whether ``model`` (``provider/name``) takes a ``kind`` part of ``media_type``; None
    when the table does not know the model."""
    provider, _, name = model.partition("/")
    if provider in EVERYTHING:
        return True
    if provider == "openrouter":
        vendor, _, inner = name.partition("/")
        if kind == "video":
            return False
        return accepts(f"{vendor}/{inner}", kind, media_type) if inner else None
    for row_provider, pattern, kinds in TABLE:
        if row_provider == provider and fnmatch.fnmatchcase(name, pattern):
            types = kinds.get(kind)
            return types is not None and (types == ALL or media_type in types)
    return None


def refusal(model: str, kind: str, media_type: str, where: str) -> str | None:
    """The validation error for sending a part the model does not take, or None."""
    if accepts(model, kind, media_type) is not False:
        return None
    takes = _takes(model)
    return (
        f"{model} does not accept {KIND_NAMES[kind]} ({media_type}), which {where} sends "
        f"(it takes {takes}; see docs/suite-format.md, Media)"
    )


def _takes(model: str) -> str:
    kinds = [
        kind
        for kind in KIND_NAMES
        if any(accepts(model, kind, t) for t, k in MEDIA_TYPES.items() if k == kind)
    ]
    return "text and " + ", ".join(kinds) if kinds else "text only"


# --- parameters: what each model takes of a suite's parameters ---------------------------

MAX_BUDGET = MAX_TOKENS  # thinking.budget_tokens has the bound of max_tokens
_O_SERIES = ("low", "medium", "high")
_GPT_5 = ("minimal", "low", "medium", "high")
_ANY = None  # reasoning_effort: every level the suite format has (the provider decides)


@dataclass(frozen=True)
class ParamRules:
    """What one model family takes. ``temperature`` is its range (None: no temperature);
    ``not_both`` pairs may not be sent together; ``efforts`` are the reasoning_effort
    levels it takes (``()`` none, None every level); ``budgets`` the ranges of
    thinking.budget_tokens it takes (``()`` no thinking budget); with ``thinking_sampling``
    (Anthropic) a request with thinking takes temperature 1 only and top_p from 0.95."""

    limit_field: str
    temperature: tuple[float, float] | None = (0, 2)
    top_p: bool = True
    stop: bool = True
    not_both: tuple[tuple[str, str], ...] = ()
    efforts: tuple[str, ...] | None = ()
    budgets: tuple[tuple[int, int], ...] = ()
    thinking_sampling: bool = False


_CHAT = ParamRules("max_completion_tokens", efforts=_ANY)  # an OpenAI model evalsite does not know
_REASONING = ParamRules("max_completion_tokens", temperature=(1, 1), top_p=False, stop=False)
_CLAUDE = ParamRules("max_tokens", temperature=(0, 1), budgets=((1024, MAX_BUDGET),),
                     thinking_sampling=True)  # fmt: skip
_NOT_BOTH = (("temperature", "top_p"),)
# From Opus 4.7 on, Claude models take no sampling parameters: a request that sets
# temperature or top_p at all is a 400 "temperature is deprecated for this model".
_CLAUDE_UNSAMPLED = dataclasses.replace(_CLAUDE, temperature=None, top_p=False)
_CLAUDE_FAMILIES = ("opus", "sonnet", "haiku", "fable")
_GEMINI = ParamRules("maxOutputTokens", budgets=((0, MAX_BUDGET),))
_FLASH_LITE = ((0, 0), (512, 24576))  # 0 turns its thinking off

# (provider, model glob, rules): the first match wins; a dated snapshot matches its family.
# Sources: OpenAI's reasoning guide and the API's "Unsupported parameter" answers; the
# Claude docs' extended thinking page and model migration notes, and the 400 Opus 4.7 and
# later give a request with temperature (reported by many clients that had to drop it);
# Gemini's thinking guide.
PARAM_TABLE: tuple[tuple[str, str, ParamRules], ...] = (
    ("openai", "gpt-5-chat*", ParamRules("max_completion_tokens")),
    ("openai", "gpt-5-pro*", dataclasses.replace(_REASONING, efforts=("high",))),
    ("openai", "gpt-5.1*", dataclasses.replace(_REASONING, efforts=EFFORTS[0:1] + _O_SERIES)),
    ("openai", "gpt-5.*", dataclasses.replace(_REASONING, efforts=_ANY)),
    ("openai", "gpt-5*", dataclasses.replace(_REASONING, efforts=_GPT_5)),
    ("openai", "o1-mini*", dataclasses.replace(_REASONING, stop=True)),
    ("openai", "o1-preview*", dataclasses.replace(_REASONING, stop=True)),
    ("openai", "o1*", dataclasses.replace(_REASONING, stop=True, efforts=_O_SERIES)),
    ("openai", "o3*", dataclasses.replace(_REASONING, efforts=_O_SERIES)),
    ("openai", "o4*", dataclasses.replace(_REASONING, efforts=_O_SERIES)),
    ("openai", "gpt-*", ParamRules("max_completion_tokens")),
    ("openai", "*", _CHAT),
    ("anthropic", "claude-opus-4-[7-9]*", _CLAUDE_UNSAMPLED),
    *(("anthropic", f"claude-{family}-[5-9]*", _CLAUDE_UNSAMPLED) for family in _CLAUDE_FAMILIES),
    ("anthropic", "claude-opus-4-1*", dataclasses.replace(_CLAUDE, not_both=_NOT_BOTH)),
    ("anthropic", "claude-*-4-[5-9]*", dataclasses.replace(_CLAUDE, not_both=_NOT_BOTH)),
    ("anthropic", "claude-opus-4*", _CLAUDE),
    ("anthropic", "claude-sonnet-4*", _CLAUDE),
    ("anthropic", "claude-3-7-sonnet*", _CLAUDE),
    ("anthropic", "claude-3*", dataclasses.replace(_CLAUDE, budgets=())),
    ("anthropic", "claude-2*", dataclasses.replace(_CLAUDE, budgets=())),
    ("anthropic", "claude-instant*", dataclasses.replace(_CLAUDE, budgets=())),
    ("anthropic", "*", _CLAUDE),
    ("google", "gemini-2.5-pro*", dataclasses.replace(_GEMINI, budgets=((128, 32768),))),
    ("google", "gemini-2.5-flash-lite*", dataclasses.replace(_GEMINI, budgets=_FLASH_LITE)),
    ("google", "gemini-2.5-flash*", dataclasses.replace(_GEMINI, budgets=((0, 24576),))),
    ("google", "gemini-1*", dataclasses.replace(_GEMINI, budgets=())),
    ("google", "gemini-2.0*", dataclasses.replace(_GEMINI, budgets=())),
    ("google", "gemma-*", dataclasses.replace(_GEMINI, budgets=())),
    ("google", "*", _GEMINI),
)
# What every other provider takes: the fake, scripted, command and given providers send no
# body (they take everything); an OpenAI-compatible server is sent Chat Completions'
# fields, with reasoning_effort, and has no field for a thinking budget.
_EVERYTHING = dataclasses.replace(_GEMINI, limit_field="max_tokens", efforts=_ANY)
_COMPATIBLE = ParamRules("max_tokens", efforts=_ANY)
_KNOWN = frozenset(row[0] for row in PARAM_TABLE)


def param_rules(model: str) -> ParamRules:
    """The parameter rules of ``model`` (``provider/name``); an unknown model gets what its
    provider's API can carry (the provider decides at the first call)."""
    provider, _, name = model.partition("/")
    if provider in EVERYTHING:
        return _EVERYTHING
    if provider == "openrouter":  # the vendor's sampling rules; OpenRouter maps the effort
        vendor, _, inner = name.partition("/")
        own = param_rules(f"{vendor}/{inner}") if vendor in _KNOWN else _COMPATIBLE
        return dataclasses.replace(own, limit_field="max_tokens", efforts=_ANY, budgets=())
    for row_provider, pattern, rules in PARAM_TABLE:
        if row_provider == provider and fnmatch.fnmatchcase(name, pattern):
            return rules
    return _COMPATIBLE


@dataclass(frozen=True)
class Fit:
    """A request's parameters as a model takes them: ``sent``, and each parameter left out
    with the reason (``"takes no top_p"``: the model's name goes before it)."""

    sent: dict[str, Any]
    left_out: dict[str, str]


def fit(model: str, params: Mapping[str, Any], explicit: Collection[str] = ()) -> Fit:
    """``params`` (a suite's, resolved for one task and contestant: temperature, top_p,
    stop, max_tokens, timeout_s, reasoning_effort, thinking) less what ``model`` does not
    take. Of two that may not go together, the one not in ``explicit`` gives way (both
    set the same way: the second named); the validation refuses what an explicit one
    loses."""
    rules = param_rules(model)
    sent = {key: value for key, value in params.items() if value is not None}
    left: dict[str, str] = {}
    for name in ("temperature", "top_p", "stop", "reasoning_effort", "thinking"):
        reason = _refused(rules, name, sent[name]) if name in sent else None
        if reason:
            del sent[name]
            left[name] = reason
    pairs = list(rules.not_both)
    if "thinking" in sent and rules.thinking_sampling:
        pairs = [("thinking", "temperature"), ("thinking", "top_p"), *pairs]
    for first, second in pairs:
        reason = _clash(first, second, sent)
        if reason:
            loser = first if second in explicit and first not in explicit else second
            del sent[loser]
            left[loser] = reason
    return Fit(sent, left)


def _refused(rules: ParamRules, name: str, value: Any) -> str | None:
    """Why ``rules`` do not take ``name`` at ``value`` alone, or None."""
    if name == "temperature":
        if rules.temperature is None:
            return "takes no temperature"
        low, high = rules.temperature
        if low == high and value != low:
            return f"takes no temperature other than {_number(low)}"
        if not low <= value <= high:
            return f"takes temperature from {_number(low)} to {_number(high)}, not {value}"
    if name in ("top_p", "stop") and not getattr(rules, name):
        return "takes no stop sequences" if name == "stop" else "takes no top_p"
    if name == "reasoning_effort" and rules.efforts is not None and value not in rules.efforts:
        if not rules.efforts:
            return "takes no reasoning_effort"
        return f"takes reasoning_effort {_or(rules.efforts)}, not {value!r}"
    if name == "thinking":
        budget = value.get("budget_tokens") if isinstance(value, Mapping) else None
        if not rules.budgets:
            return "takes no thinking budget"
        if not isinstance(budget, int) or not any(
            low <= budget <= high for low, high in rules.budgets
        ):
            return f"takes thinking.budget_tokens {_ranges(rules.budgets)}, not {budget}"
    return None


def _clash(first: str, second: str, sent: Mapping[str, Any]) -> str | None:
    """Why ``first`` and ``second`` may not both be sent as they are, or None."""
    if first not in sent or second not in sent:
        return None
    if first == "thinking" and second == "temperature":
        return None if sent["temperature"] == 1 else "with thinking, takes temperature 1 only"
    if first == "thinking" and second == "top_p":
        return None if sent["top_p"] >= 0.95 else "with thinking, takes top_p from 0.95 to 1"
    return f"takes {first} or {second}, not both"


def _number(value: float) -> str:
    return f"{value:g}"


def _or(items: tuple[str, ...]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _ranges(ranges: tuple[tuple[int, int], ...]) -> str:
    def one(low: int, high: int) -> str:
        if low == high:
            return str(low)
        return f"from {low}" if high == MAX_BUDGET else f"from {low} to {high}"

    return " or ".join(one(low, high) for low, high in ranges)
