"""JSON from a file someone gave us (a pair-set line, a baseline file): read by Python's json
module within the bounds every input file gets, so a hostile file is one clear message and
never an exception of the reader's.

- ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON numbers and are refused.
- An integer of more than :data:`~evalsite.core.input_limits.MAX_INT_DIGITS` digits is
  refused with the YAML loader's words (Python would raise its own ValueError).
- Nesting deeper than :data:`~evalsite.core.yamlsafe.MAX_DEPTH` levels is refused, as in
  YAML (deeper than Python's recursion limit the reader would raise RecursionError).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from evalsite.core.input_limits import MAX_INT_DIGITS, int_digits_message
from evalsite.core.yamlsafe import MAX_DEPTH

__all__ = ["JsonTextError", "load_json"]

NESTING_MESSAGE = f"nesting is deeper than {MAX_DEPTH} levels"


class JsonTextError(ValueError):
    """JSON that cannot be read; the message says why (and at which column, when known),
    ``line`` where (1 when the reader cannot tell)."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


def load_json(text: str | bytes, *, object_pairs_hook: Callable[..., Any] | None = None) -> Any:
    """The value of the JSON `text`; JsonTextError naming what is wrong otherwise."""
    try:
        value = json.loads(
            text,
            parse_constant=_no_constant,
            parse_int=_bounded_int,
            object_pairs_hook=object_pairs_hook,
        )
    except json.JSONDecodeError as error:
        message = f"not valid JSON: {error.msg} at column {error.colno}"
        raise JsonTextError(message, error.lineno) from None
    except RecursionError:
        raise JsonTextError(f"not valid JSON: {NESTING_MESSAGE}") from None
    except ValueError as error:  # the hooks' refusals
        raise JsonTextError(f"not valid JSON: {error}") from None
    if _deeper_than(value, MAX_DEPTH):
        raise JsonTextError(f"not valid JSON: {NESTING_MESSAGE}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(int_digits_message(len(digits.lstrip("-"))))
    return int(digits)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest more than `limit` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return False
