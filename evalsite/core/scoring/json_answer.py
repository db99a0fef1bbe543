"""JSON in an answer: parsing, the schema verdict and ``json_path`` lookups (SPEC §7.1).

An answer's JSON is the whole trimmed answer when that parses, else the inside of its
first fenced block. ``NaN``/``Infinity`` are not JSON and fail to parse; so does nesting
deeper than Python's recursion limit. Duplicate keys keep the last value (as every JSON
parser in the stack does).

The schema verdict's error is jsonschema's :func:`~jsonschema.exceptions.best_match`: the
error nearest the root, and inside ``anyOf``/``oneOf`` the most specific branch error. It is
deterministic for a given schema and answer (ties go to the first error in the order
jsonschema visits the schema's keywords, which follows the schema as written). It reads
``$.plan: 'Team' is not one of ['starter', 'team', ...]`` - a JSON path, then the message,
cut to :data:`MAX_MESSAGE` characters.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jsonschema.exceptions import best_match
from referencing.exceptions import Unresolvable

from evalsite.core.json_schemas import unusable_reason, validator
from evalsite.core.patterns import PatternError
from evalsite.core.scoring.fences import fenced_blocks

__all__ = [
    "JsonAnswer", "MISSING", "SchemaVerdict", "find_json", "json_path_value", "format_json_path",
    "parse_json_answer", "schema_verdict",
]  # fmt: skip

MAX_MESSAGE = 300
MAX_OBJECT_STARTS = 200  # find_json tries at most this many '{' positions
Verdict = Literal["pass", "parse_fail", "schema_fail", "not_applicable"]
MISSING = object()  # json_path_value's answer for a path that leads nowhere
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


@dataclass(frozen=True)
class JsonAnswer:
    """The parsed value (None is JSON null when ``ok``) or why nothing parsed."""

    ok: bool
    value: Any = None
    error: str | None = None


@dataclass(frozen=True)
class SchemaVerdict:
    verdict: Verdict
    parsed: Any = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "parsed": self.parsed, "error": self.error}


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _loads(text: str) -> JsonAnswer:
    try:
        return JsonAnswer(True, json.loads(text, parse_constant=_reject_constant))
    except RecursionError:
        return JsonAnswer(False, error="not JSON: nested too deeply")
    except ValueError as error:  # JSONDecodeError, NaN, ints past Python's digit limit
        return JsonAnswer(False, error=f"not JSON: {_cut(str(error))}")


def parse_json_answer(answer: str) -> JsonAnswer:
    """The answer's JSON: the whole trimmed answer, else its first fenced block.

    When neither parses, the error is the fenced block's when there is one (that is where
    the JSON was meant to be), else the whole answer's.
    """
    trimmed = answer.strip()
    whole = _loads(trimmed)
    if whole.ok:
        return whole
    blocks = fenced_blocks(trimmed)
    return _loads(blocks[0].code) if blocks else whole


def schema_verdict(answer: str, schema: Mapping[str, Any] | bool | None) -> SchemaVerdict:
    """pass / parse_fail / schema_fail, or not_applicable when the task has no schema.

    ``schema`` is a JSON Schema 2020-12 (suite validation has already checked it is one and
    that its ``$ref``s resolve inside it and RE2 compiles its patterns). A schema that
    cannot be applied all the same (a stored suite from before that check, or edited in the
    database) is a schema_fail saying why, never an exception; its ``$ref``s are never
    fetched or read, and its patterns are matched by RE2, in time linear in the answer.
    """
    if schema is None:
        return SchemaVerdict("not_applicable")
    parsed = parse_json_answer(answer)
    if not parsed.ok:
        return SchemaVerdict("parse_fail", error=parsed.error)
    try:
        reason = unusable_reason(schema)
        if reason is not None:
            return SchemaVerdict("schema_fail", parsed.value, _cut(f"task schema error: {reason}"))
        error = best_match(validator(schema).iter_errors(parsed.value))
    except RecursionError:
        return SchemaVerdict("schema_fail", parsed.value, "$: nested too deeply to validate")
    except Unresolvable:  # a dynamic ref the static check cannot see through
        message = "task schema error: a $ref does not resolve inside the schema"
        return SchemaVerdict("schema_fail", parsed.value, message)
    except PatternError as error:  # patternProperties joined by additionalProperties
        return SchemaVerdict("schema_fail", parsed.value, _cut(f"task schema error: {error}"))
    if error is None:
        return SchemaVerdict("pass", parsed.value)
    message = f"{format_json_path(error.absolute_path)}: {_cut(error.message)}"
    return SchemaVerdict("schema_fail", parsed.value, message)


def format_json_path(parts: Any) -> str:
    """``$.a.b[0]`` for a path of keys and indexes; keys that are not names are quoted."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def json_path_value(value: Any, path: str) -> Any:
    """The value at ``path`` (``$``, ``.name``, ``[0]``, ``['key']``, ``["key"]`` steps).

    :data:`MISSING` when a step finds no key or index; ValueError for a path outside the
    grammar (suite validation refuses those first).
    """
    if not path.startswith("$"):
        raise ValueError(f"a json_path starts with '$', not {path[:1]!r}")
    position = 1
    while position < len(path):
        step = _STEP.match(path, position)
        if step is None:
            raise ValueError(f"cannot read json_path {path!r} at character {position}")
        name, index, single, double = step.groups()
        if index is not None:
            value = _item(value, int(index))
        else:
            key = next(part for part in (name, single, double) if part is not None)
            value = value.get(key, MISSING) if isinstance(value, dict) else MISSING
        if value is MISSING:
            return MISSING
        position = step.end()
    return value


def _item(value: Any, index: int) -> Any:
    return value[index] if isinstance(value, list) and index < len(value) else MISSING


def find_json(text: str) -> Any:
    """Lenient JSON from a model's reply: the whole reply, else the first fenced block, else
    the first ``{…}`` object that parses. ValueError when none does."""
    parsed = parse_json_answer(text)
    if parsed.ok:
        return parsed.value
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    for match in itertools.islice(re.finditer(r"\{", text), MAX_OBJECT_STARTS):
        try:
            return decoder.raw_decode(text, match.start())[0]
        except (ValueError, RecursionError):
            continue
    raise ValueError(parsed.error or "no JSON found")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"
