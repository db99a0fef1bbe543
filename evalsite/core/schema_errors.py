"""Validate suite data against :data:`~evalsite.core.suite_schema.SUITE_SCHEMA` and word
every error as a located Problem.

An unknown key becomes one Problem per key naming its full path, with a did-you-mean from
the keys allowed at that level (``unknown key 'rubrik' - did you mean 'rubric'?``). A wrong
type names the expected type and what was found; enums list their values with a
did-you-mean; a fragment's ``x-message`` replaces jsonschema's wording for its rule. All
errors are reported, in document order.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import json
import re
from collections.abc import Iterable
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from evalsite.core.json_schemas import validator
from evalsite.core.problems import Path, Problem, SourceMap
from evalsite.core.schema_predicate import Check, predicate
from evalsite.core.suite_schema import DEFS, SUITE_SCHEMA

MAX_ERRORS = 1000  # schema errors examined per document; the report shows fewer anyway


def _dereference(node: Any) -> Any:
    """The schema with every ``$ref`` replaced by its definition (the schema is not recursive).

    jsonschema resolves a ``$ref`` on every use; inlining them halves validation time.
    """
    if isinstance(node, dict):
        if set(node) == {"$ref"}:
            return _dereference(DEFS[node["$ref"].removeprefix("#/$defs/")])
        return {key: _dereference(value) for key, value in node.items() if key != "$defs"}
    if isinstance(node, list):
        return [_dereference(item) for item in node]
    return node


@functools.cache
def _schema(definition: str | None) -> Any:
    return _dereference(SUITE_SCHEMA if definition is None else DEFS[definition])


@functools.cache
def _validator(definition: str | None) -> Validator:
    return validator(_schema(definition))


@functools.cache
def _valid(definition: str | None) -> Check:
    return predicate(_schema(definition))


def schema_problems(
    instance: Any, sources: SourceMap, *, definition: str | None = None, prefix: Path = ()
) -> list[Problem]:
    """Schema errors in ``instance`` as located Problems, in document order.

    ``definition`` names a ``$defs`` entry to validate against instead of the whole suite
    (``"cases"`` for a cases file); ``prefix`` is where ``instance`` sits in the suite. At
    most :data:`MAX_ERRORS` errors are examined, so a huge broken file stays cheap. A valid
    instance is told apart first by a compiled predicate (:mod:`~evalsite.core.
    schema_predicate`, a few µs a case); jsonschema words the errors of the others.
    """
    if _valid(definition)(instance):
        return []
    found: dict[tuple[Path, str], Problem] = {}
    errors = _validator(definition).iter_errors(instance)
    for error in itertools.islice(errors, MAX_ERRORS):
        for path, message in _explain(error):
            full = (*prefix, *path)
            found.setdefault((full, message), sources.problem(full, message))
    return sorted(found.values(), key=lambda p: (p.file != sources.file, p.file, p.line or 0))


def _explain(error: ValidationError) -> Iterable[tuple[Path, str]]:
    """(path, message) pairs for one jsonschema error; unknown keys give one pair each."""
    path = tuple(error.absolute_path)
    keyword = error.validator
    schema: Any = error.schema  # typed loosely by jsonschema; ours are always dicts
    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(schema.get("properties", {}))
        for key in error.instance:
            if key not in allowed:
                yield (*path, key), _unknown_key(key, allowed)
        return
    if "propertyNames" in error.relative_schema_path:
        path = (*path, str(error.instance))  # the offending name itself
    if keyword == "required":
        required: Any = error.validator_value
        for key in required:
            if isinstance(error.instance, dict) and key not in error.instance:
                yield path, f"missing required key '{key}'"
        return
    custom = schema.get("x-message")
    if custom and keyword != "type":
        yield path, custom
        return
    yield path, _message(error)


def _unknown_key(key: str, allowed: list[str]) -> str:
    message = f"unknown key '{key}'"
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if close:
        return f"{message} - did you mean '{close[0]}'?"
    return f"{message}; allowed here: {', '.join(allowed)}"


_TYPE_NAMES = {
    "string": "text",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


def _describe(value: Any) -> str:
    """A short description of a loaded value for messages: ``text 'ten'``, ``a list``…"""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"text {shown!r}"
    return "a mapping" if isinstance(value, dict) else "a list"


def _message(error: ValidationError) -> str:
    keyword, value = error.validator, error.instance
    expected: Any = error.validator_value
    if keyword == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        message = f"expected {' or '.join(_TYPE_NAMES[n] for n in names)}, got {_describe(value)}"
        if "string" in names and isinstance(value, bool | int | float):
            message += " - quote it to keep it as text"
        return message
    if keyword == "enum":
        return _enum_message(expected, value)
    if keyword == "const":
        return f"must be {json.dumps(expected)}"
    bounds = {
        "minimum": "at least",
        "maximum": "at most",
        "exclusiveMinimum": "more than",
        "exclusiveMaximum": "less than",
    }
    if keyword in bounds:
        return f"must be {bounds[keyword]} {expected}, got {value}"
    if keyword in ("minItems", "minLength", "minProperties") and expected == 1:
        return "must not be empty"
    return re.sub(r"\s+", " ", error.message)


def _enum_message(allowed: list[Any], value: Any) -> str:
    message = f"must be one of: {', '.join(str(item) for item in allowed)}; got {_describe(value)}"
    if isinstance(value, str):
        close = difflib.get_close_matches(value, [str(a) for a in allowed], n=1, cutoff=0.6)
        if close:
            message += f" - did you mean '{close[0]}'?"
    return message
