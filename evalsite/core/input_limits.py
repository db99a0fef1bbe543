"""Limits every input file shares (suite, schema, cases, labels): size, encoding, values.

- :func:`decode_text`: at most :data:`MAX_BYTES` bytes, checked before decoding; UTF-8 (a BOM
  is allowed) with no NUL byte, the first bad byte named by line and column.
- :func:`value_problems`: loaded data must be JSON-compatible and storable: text, finite
  numbers, booleans, null, lists and maps; no string (or key) holding U+0000 or a lone
  surrogate, which SQLite, PostgreSQL and HTTP responses all refuse.
- :func:`count_nodes` / :data:`MAX_NODES`: the number of values later checks will walk.
- :data:`MAX_INT_DIGITS`: the longest integer Python reads or prints (4,300 digits).
"""

from __future__ import annotations

import math
import re
from typing import Any

from evalsite.core.problems import Path, Problem, SourceMap, SuiteError

MAX_BYTES = 5 * 1024 * 1024
MAX_NODES = 200_000
# Python's default bound on int <-> str conversion (``sys.int_info.default_max_str_digits``):
# ``int()`` refuses a longer integer, and ``str()`` of one built another way fails later.
MAX_INT_DIGITS = 4300

_LIMIT = f"the limit is {MAX_BYTES:,} bytes ({MAX_BYTES >> 20} MiB)"
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")


def decode_text(data: bytes, *, filename: str) -> str:
    """Check size, NUL bytes and UTF-8 of ``data`` and return it as text without a BOM."""
    if len(data) > MAX_BYTES:
        raise SuiteError([Problem(filename, None, "", size_message(len(data)))])
    problems = []
    nul = data.find(b"\x00")
    if nul >= 0:
        line, column = _position(data, nul)
        message = f"NUL byte at column {column}: suite files must be text"
        problems.append(Problem(filename, line, "", message))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line, column = _position(data, error.start)
        message = f"not valid UTF-8: byte 0x{data[error.start]:02x} at column {column}"
        problems.append(Problem(filename, line, "", message))
    if problems:
        raise SuiteError(problems)
    return text.removeprefix("\ufeff")


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored (a NUL or a lone surrogate), or None if it can."""
    match = _BAD_CHAR.search(value)
    if match is None:
        return None
    if match.group() == "\x00":
        return "text contains a NUL character (U+0000)"
    return f"text contains a lone surrogate (U+{ord(match.group()):04X}), which is not a character"


def value_problems(data: Any, sources: SourceMap) -> list[Problem]:
    """Problems with values that are not JSON text, numbers, booleans, null, lists or maps."""
    if _plain_values(data):
        return []  # the usual case, told without a path for each value
    problems = []
    stack: list[tuple[Path, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        message = _value_problem(value)
        if message:
            problems.append(sources.problem(path, message))
        if isinstance(value, dict):
            for key, item in value.items():
                key_message = _value_problem(key)
                if key_message:
                    problems.append(sources.problem((*path, str(key)), "key: " + key_message))
                stack.append(((*path, key), item))
        elif isinstance(value, list):
            stack.extend(((*path, index), item) for index, item in enumerate(value))
    return sorted(problems, key=lambda p: (p.line or 0, p.path))


def _plain_values(data: Any) -> bool:
    """Whether :func:`value_problems` would find nothing in ``data``: only JSON's own types
    (exactly), finite numbers and text keys, and no text with a character
    :func:`text_problem` refuses (one search of the texts joined by newlines, which it never
    refuses). False sends anything else to the walk that words each problem."""
    texts: list[str] = []
    stack = [data]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is str:
            texts.append(value)
        elif kind is dict:
            keys = list(value)
            if not all(type(key) is str for key in keys):
                return False
            texts += keys
            stack += value.values()
        elif kind is list:
            stack += value
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif value is not None and kind is not bool and kind is not int:
            return False
    return _BAD_CHAR.search("\n".join(texts)) is None


def _value_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number; write a number or quote the text"
    if value is None or isinstance(value, bool | int | float | dict | list):
        return None
    return f"unsupported YAML value ({type(value).__name__}); use text, numbers, lists or maps"


def int_digits_message(digits: int) -> str:
    """The message for an integer of ``digits`` decimal digits, over :data:`MAX_INT_DIGITS`."""
    return (
        f"integer of {digits:,} digits is too long (at most {MAX_INT_DIGITS:,}); "
        "quote it to keep it as text"
    )


def nodes_message() -> str:
    """The message for a file holding more than :data:`MAX_NODES` nodes."""
    return f"the file holds more than {MAX_NODES:,} values; split it or move cases to a file"


def count_nodes(data: Any) -> int:
    """Keys, scalars, lists and mappings in ``data``, counted the way the YAML bound is."""
    count, stack = 0, [data]
    while stack:
        value = stack.pop()
        count += 1
        if isinstance(value, dict):
            count += len(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return count


def size_message(size: int) -> str:
    """The message for a file of ``size`` bytes that is over :data:`MAX_BYTES`."""
    return f"file is {size:,} bytes; {_LIMIT}"


def sent_size_message(sent: int | None) -> str:
    """The message for text the web server would not read (over Django's request limit,
    above :data:`MAX_BYTES`), whose request was ``sent`` bytes long when that is known."""
    request = f" ({sent:,} bytes sent)" if sent else ""
    return f"file is larger than {MAX_BYTES:,} bytes{request}; {_LIMIT}"


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and character column of byte ``offset`` (the bytes before it decode)."""
    start = data.rfind(b"\n", 0, offset) + 1
    prefix = data[start:offset].decode("utf-8", errors="replace")
    return data.count(b"\n", 0, offset) + 1, len(prefix) + 1
