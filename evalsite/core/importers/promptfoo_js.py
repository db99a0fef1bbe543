"""promptfoo's common one-line ``javascript`` assertions as evalsite checks.

Only expressions whose meaning an evalsite check has exactly are translated; anything else
stays untranslated (evalsite runs no JavaScript). A body may be ``return EXPR;`` or
``EXPR``, with any spacing:

- ``output.length < N`` / ``<=`` / ``>`` / ``>=`` -> ``max_chars`` / ``min_chars``;
- ``output.includes(S)`` / ``!output.includes(S)`` -> ``contains`` / ``not_contains``;
- ``output.toLowerCase().includes(s)`` (``s`` in lower case) -> ``contains``, any case;
- ``output.startsWith(S)`` -> ``regex`` anchored at the start;
- ``output.trim() === S`` (or ``==``) -> ``equals``;
- ``JSON.parse(output).a.b === V`` (``V`` a string, number, true, false or null) ->
  ``json_path`` ``$.a.b`` equals ``V``.

``S`` is a quoted string with no escapes or ``${}``. evalsite's text checks read the
trimmed answer (the inside of its fenced block when it has one) and the length checks the
trimmed answer, where promptfoo reads the raw output: docs/importing.md says so.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["javascript_checks"]

_STRING = r"""(?:'(?P<{0}1>[^'\\\n]*)'|"(?P<{0}2>[^"\\\n]*)"|`(?P<{0}3>[^`\\$\n]*)`)"""
_S = _STRING.format("s")
_V = r"(?P<value>" + _STRING.format("v") + r"|-?\d+(?:\.\d+)?|true|false|null)"
_KEY = r"[A-Za-z_][A-Za-z0-9_]*"
_PATTERNS = {
    "length": re.compile(r"output\.length\s*(?P<op><=|<|>=|>)\s*(?P<n>\d+)"),
    "includes": re.compile(r"(?P<not>!\s*)?output\.includes\(\s*" + _S + r"\s*\)"),
    "lower": re.compile(r"output\.toLowerCase\(\)\.includes\(\s*" + _S + r"\s*\)"),
    "starts": re.compile(r"output\.startsWith\(\s*" + _S + r"\s*\)"),
    "equals": re.compile(r"output\.trim\(\)\s*===?\s*" + _S),
    "json": re.compile(r"JSON\.parse\(\s*output\s*\)(?P<path>(?:\." + _KEY + r")+)\s*===?\s*" + _V),
}


def javascript_checks(value: Any) -> list[dict[str, Any]] | None:
    """The checks a one-line javascript assertion is, or None when it is not one of the
    shapes in this module's docstring."""
    if not isinstance(value, str):
        return None
    body = value.strip()
    body = re.sub(r"^return\s+", "", body).rstrip(";").strip()
    for kind, pattern in _PATTERNS.items():
        match = pattern.fullmatch(body)
        if match is not None:
            return _check(kind, match)
    return None


def _text(match: re.Match[str], group: str) -> str | None:
    for n in (1, 2, 3):
        found = match.group(f"{group}{n}")
        if found is not None:
            return found
    return None


def _check(kind: str, match: re.Match[str]) -> list[dict[str, Any]] | None:
    if kind == "length":
        n, op = int(match["n"]), match["op"]
        bound = {"<": ("max_chars", n - 1), "<=": ("max_chars", n),
                 ">": ("min_chars", n + 1), ">=": ("min_chars", n)}[op]  # fmt: skip
        return [{bound[0]: bound[1]}] if bound[1] >= 0 else None
    if kind == "json":
        raw = match["value"]
        text = _text(match, "v")
        equals = text if text is not None else json.loads(raw)
        return [{"json_path": {"path": "$" + match["path"], "equals": equals}}]
    text = _text(match, "s")
    if text is None:
        return None
    if kind == "includes":
        return [{"not_contains" if match["not"] else "contains": text}]
    if kind == "lower":
        return [{"contains": text, "case_sensitive": False}] if text == text.lower() else None
    if kind == "starts":
        return [{"regex": r"\A" + re.escape(text)}]
    return [{"equals": text}]
