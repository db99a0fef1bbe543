"""Regular expressions a suite author wrote, matched in time linear in the text (RE2).

A suite's ``regex`` checks, the ``pattern`` and ``patternProperties`` of its task schemas
and the regexes the importers carry over from promptfoo and evaling are untrusted input.
Python's `re` backtracks: ``^(a+)+$`` against ``aaaa…!`` doubles its time with each
character, so one 40-character answer could hold a worker for days. These patterns are
compiled by RE2 (google-re2), which never backtracks: matching is linear in the text, and
compiling a pattern uses at most :data:`MAX_MEMORY` bytes.

Contract:

- :func:`pattern_error` says why RE2 cannot compile a pattern (look-around,
  back-references, ``\\Z``, a pattern too large), worded for the suite's author; validation
  reports it at the pattern's line, so no stored suite is refused at run time.
- :func:`search` finds a pattern anywhere in a text, as ``re.search`` did; a pattern RE2
  cannot compile (a suite stored before validation refused it) raises :class:`PatternError`
  with the same wording, for the caller to turn into a failed check or a schema_fail.
- :func:`use_in_jsonschema` makes jsonschema's ``pattern``, ``patternProperties`` and the
  ``additionalProperties`` / ``unevaluatedProperties`` that read them match with RE2 too.

RE2 differs from `re` in what it reads, never in how long it may take: ``\\d``, ``\\w`` and
``\\b`` are ASCII-only, ``$`` without ``(?m)`` matches only at the very end (``\\z``), and
there is no look-around, back-reference or ``\\Z``. docs/checks.md#regular-expressions.
"""

from __future__ import annotations

import functools
from types import ModuleType, SimpleNamespace
from typing import Any

import re2

__all__ = [
    "MAX_MEMORY", "PatternError", "literal", "pattern_error", "search", "use_in_jsonschema",
]  # fmt: skip

MAX_MEMORY = 8 << 20  # bytes RE2 may use to compile one pattern (its own default)

_NOT_IN_RE2 = "RE2 has no look-around or back-references"
_HINTS = (  # (what RE2's reason contains, what to tell the author)
    ("perl operator: (?=", _NOT_IN_RE2),
    ("perl operator: (?!", _NOT_IN_RE2),
    ("perl operator: (?<", _NOT_IN_RE2),
    ("perl operator: (?P", _NOT_IN_RE2),  # (?P=name); (?P<name>...) compiles
    *((f"escape sequence: \\{digit}", _NOT_IN_RE2) for digit in "123456789"),
    ("escape sequence: \\Z", "write \\z for the end of the text"),
    ("too large", "RE2 compiles a pattern in at most 8 MiB"),
)


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message is :func:`pattern_error`'s."""


def pattern_error(pattern: str) -> str | None:
    """Why RE2 cannot compile ``pattern``, for its author; None when it can."""
    try:
        _compiled(pattern, True)
    except PatternError as error:
        return str(error)
    return None


def literal(text: str) -> str:
    """A pattern that matches ``text`` itself: every ASCII character but letters, digits
    and ``_`` escaped for RE2 (``a.b`` → ``a\\.b``)."""
    return str(re2.escape(text))


def search(pattern: str, text: str, *, case_sensitive: bool = True) -> bool:
    """Whether ``pattern`` is found anywhere in ``text``; PatternError if it cannot be used."""
    return _compiled(pattern, case_sensitive).search(text) is not None


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str, case_sensitive: bool) -> Any:
    options = re2.Options()
    options.log_errors = False  # the reason goes to the author, not to the server's stderr
    options.case_sensitive = case_sensitive
    options.max_mem = MAX_MEMORY
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        raise PatternError(_reason(error)) from None


def _reason(error: Exception) -> str:
    raw = error.args[0] if error.args else str(error)
    reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    hint = next((hint for marker, hint in _HINTS if marker in reason), None)
    message = f"invalid regular expression: {reason}"
    return f"{message} ({hint}; evalsite matches with RE2)" if hint else message


def _schema_search(pattern: str, text: str) -> bool:
    return search(pattern, text)


_RE_FOR_JSONSCHEMA = SimpleNamespace(search=_schema_search)


def use_in_jsonschema(*modules: ModuleType) -> None:
    """Point the ``re`` that ``modules`` (jsonschema's keyword modules) call ``re.search``
    on at RE2. jsonschema has no setting for its regex engine, and those modules use
    nothing of ``re`` but ``search``, so every validator in the process matches patterns in
    linear time; a pattern RE2 cannot compile raises :class:`PatternError`."""
    for module in modules:
        module.re = _RE_FOR_JSONSCHEMA  # type: ignore[attr-defined]
