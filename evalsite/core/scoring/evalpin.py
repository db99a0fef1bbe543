"""evalpin's reading of a reply and its JSON comparison, for the check options
``read: evalpin`` and ``json_path: {compare: json_spelling}`` (docs/checks.md).

evalpin (an offline runner whose suites ``evalsite import evalpin`` translates) reads a reply
differently from evalsite's default in two ways, each kept exact here rather than
approximated:

- :func:`evalpin_text`: only ASCII space, TAB, CR and LF are trimmed (``str.strip()`` also
  trims NBSP, form feeds and the other Unicode spaces), and a fence is read only when the
  *whole* trimmed reply is one fenced block: at least two lines, the first starting with
  three backticks (the rest of that line ignored), the last exactly three backticks. Then
  the lines between are the text, as they are (not trimmed again). A reply with prose
  around a block is read whole.
- :func:`load_spelled` / :func:`same_spelling`: JSON numbers keep their spelling, so ``1``
  and ``1.0`` differ (strings compare by decoded content; true, false and null by value).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evalsite.core.scoring.json_answer import JsonAnswer

__all__ = ["JsonNumber", "evalpin_text", "is_json_scalar", "load_spelled", "same_spelling"]

ASCII_BLANKS = " \t\r\n"


def evalpin_text(answer: str) -> str:
    """The text evalpin checks: trimmed of ASCII blanks, and the inside of the fence when
    the whole reply is one fenced block."""
    text = answer.strip(ASCII_BLANKS)
    lines = text.split("\n")
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1] == "```":
        return "\n".join(lines[1:-1])
    return text


@dataclass(frozen=True)
class JsonNumber:
    """A JSON number as spelled in its document (``1.0``, ``-0``, ``1e2``)."""

    text: str

    def __repr__(self) -> str:
        return self.text


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def load_spelled(text: str) -> JsonAnswer:
    """``text`` parsed as JSON whole, numbers kept as :class:`JsonNumber`; NaN and Infinity
    are not JSON."""
    try:
        value = json.loads(
            text, parse_int=JsonNumber, parse_float=JsonNumber, parse_constant=_reject_constant
        )
    except RecursionError:
        return JsonAnswer(False, error="not JSON: nested too deeply")
    except ValueError as error:
        return JsonAnswer(False, error=f"not JSON: {str(error)[:300]}")
    return JsonAnswer(True, value)


def is_json_scalar(text: Any) -> bool:
    """Whether ``text`` is a text holding one JSON string, number, true, false or null."""
    if not isinstance(text, str):
        return False
    parsed = load_spelled(text)
    return parsed.ok and not isinstance(parsed.value, list | dict)


def same_spelling(found: Any, expected: Any) -> bool:
    """Scalar equality by JSON spelling: numbers by their text, the rest by value and type."""
    if isinstance(found, list | dict) or isinstance(expected, list | dict):
        return False
    return type(found) is type(expected) and found == expected
