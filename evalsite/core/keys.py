"""Recognise and scrub strings shaped like provider API keys.

Shapes (SPEC §3): ``sk-ant-…``, ``sk-…`` and ``sk-proj-…`` with 16 or more key characters
after ``sk-``, and Google's ``AIza…`` with 20 or more after ``AIza``. Key characters are
ASCII letters, digits, ``_`` and ``-``. A match must not be glued to a preceding word
character, so ``task-list-…`` or ``risk-assessment-…`` never match.

These functions never return or log the key text itself: callers report a key by its
position and by the public prefix that :func:`redact` keeps (``sk-`` or ``AIza``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_KEY = re.compile(
    r"(?<![A-Za-z0-9_-])"
    r"(?:(?P<sk>sk-)[A-Za-z0-9_-]{16,}|(?P<aiza>AIza)[A-Za-z0-9_-]{20,})"
)

REDACTED = "[REDACTED]"


def looks_like_key(text: str) -> bool:
    """True when ``text`` contains at least one key-shaped substring."""
    return _KEY.search(text) is not None


def any_looks_like_key(texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` contains a key-shaped substring: one search of them joined
    by newlines, which no key shape spans and which stand where a text starts."""
    return _KEY.search("\n".join(texts)) is not None


def key_prefix(text: str) -> str:
    """The public prefix (``sk-`` or ``AIza``) of the first key-shaped substring, or ""."""
    match = _KEY.search(text)
    if match is None:
        return ""
    return match.group("sk") or match.group("aiza")


def redact(text: str) -> str:
    """``text`` with every key-shaped substring replaced by its prefix and ``[REDACTED]``.

    ``"use sk-abc…xyz now"`` becomes ``"use sk-[REDACTED] now"``. Text without a key is
    returned unchanged, so this is safe to apply to any message before it is stored or shown.
    """
    return _KEY.sub(lambda m: (m.group("sk") or m.group("aiza")) + REDACTED, text)


# Environment variables whose values are secrets: by name, and the connection strings.
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
SECRET_VARIABLES = frozenset({"DATABASE_URL", "EVALSITE_REDIS_URL"})
MIN_SECRET_CHARS = 8  # shorter values would mangle text and hide nothing


def held_secrets(env: Mapping[str, str], also: Iterable[str] = ()) -> list[str]:
    """The values this process holds that must never be stored or shown: every variable
    named like a secret, the connection strings, and the variables named in `also` (an
    endpoint's key variable); longest first, so a longer secret is replaced whole."""
    names = set(also) | SECRET_VARIABLES
    values = {
        value
        for name, value in env.items()
        if (SECRET_NAME.search(name) or name in names) and len(value) >= MIN_SECRET_CHARS
    }
    return sorted(values, key=len, reverse=True)


def without_secrets(text: str, secrets: Iterable[str]) -> str:
    """`text` with each held secret value replaced by ``[REDACTED]`` (exact matches only:
    an answer's own key-shaped examples are the answer's)."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text
