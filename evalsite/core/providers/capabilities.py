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

import fnmatch
from collections.abc import Mapping

from evalsite.core.media import KIND_NAMES, MEDIA_TYPES

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
