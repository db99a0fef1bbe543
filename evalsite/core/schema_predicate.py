"""Whether a value is valid against a JSON Schema, answered without jsonschema's errors.

jsonschema walks a suite's cases keyword by keyword, building an error context for each:
about 50 µs a case, most of reading a large suite. A suite is nearly always valid, and then
nothing of that work is used. :func:`predicate` compiles a schema (its ``$ref``\\ s already
inlined) into a function that answers only whether a value is valid.

Contract:

- ``predicate(schema)(value)`` is True only when jsonschema (Draft 2020-12, patterns
  matched by RE2 as in every validator of the process: :mod:`~evalsite.core.patterns`)
  finds no error in ``value``. It is False when jsonschema would find one, and also when
  the walk meets a value of any type but JSON's own (``dict``, ``list``, ``str``, ``int``,
  ``float``, ``bool``, ``None``) or anything raises: the caller then asks jsonschema,
  whose answer and errors are the ones reported.
- A schema with a keyword outside those below (``$ref``, ``patternProperties``,
  ``prefixItems``, ``unevaluated*``, ``format``…) raises :class:`UnsupportedSchema` when it
  is compiled, so a keyword added to the suite schema is never silently skipped.
- Each keyword applies to the types jsonschema applies it to: ``pattern`` to strings,
  ``minimum`` to numbers (never a boolean), ``required`` to mappings…
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from evalsite.core.patterns import pattern_error, search

__all__ = ["UnsupportedSchema", "predicate"]

Check = Callable[[Any], bool]

_JSON_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})
_PYTHON_TYPES: Mapping[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
    "number": (int, float),
    "integer": (int,),  # and a float with no fraction: _type
}
# A pattern of anchors, alternatives, groups, counts, "." and literal letters, digits and
# "_/:@-" (bare or in brackets): Python's `re` and RE2 find it in the same texts once the
# text is ASCII and has no newline (before a last newline, `$` matches in `re` alone). RE2's
# wrapper converts each text to UTF-8 first, which costs 20 times the match.
_PLAIN_PATTERN = re.compile(
    r"(?:[\^$|()*+?.A-Za-z0-9_/:@-]|\\\.|\[\^?(?:[A-Za-z0-9_./:@-]|\\\.)+\]|\{\d+(?:,\d*)?\})*"
)
_ANNOTATIONS = frozenset({"$schema", "title", "description", "x-message", "then", "else"})


class UnsupportedSchema(ValueError):
    """A schema using a keyword :func:`predicate` does not know."""


class _NotJson(Exception):
    """A value of a type JSON does not have: jsonschema decides."""


def predicate(schema: Any) -> Check:
    """A function telling whether a value is valid against ``schema`` (see the contract)."""
    check = _compile(schema)

    def valid(value: Any) -> bool:
        try:
            return check(value)
        except Exception:  # a value not JSON's, or one a pattern cannot be matched against
            return False

    return valid


def _compile(schema: Any) -> Check:
    if schema is True:
        return _json
    if schema is False:
        return _nothing
    if not isinstance(schema, dict):
        raise UnsupportedSchema(f"not a schema: {schema!r:.60}")
    built = [_keyword(key, value, schema) for key, value in schema.items()]
    checks = [check for check in built if check is not None]

    def node(value: Any) -> bool:
        if type(value) not in _JSON_TYPES:
            raise _NotJson
        for check in checks:  # noqa: SIM110 - all() over a generator: a third slower here
            if not check(value):
                return False
        return True

    return node


def _json(value: Any) -> bool:
    if type(value) not in _JSON_TYPES:
        raise _NotJson
    return True


def _nothing(value: Any) -> bool:
    return False


def _keyword(key: str, value: Any, schema: Mapping[str, Any]) -> Check | None:
    if key in _ANNOTATIONS:
        return None  # "then" and "else" are read with their "if"
    build = _KEYWORDS.get(key)
    if build is None:
        raise UnsupportedSchema(f"keyword {key!r} is not supported")
    return build(value, schema)


def _type(names: Any, schema: Any) -> Check:
    names = [names] if isinstance(names, str) else list(names)
    types = tuple(t for name in names for t in _PYTHON_TYPES[name])
    whole_floats = "integer" in names and "number" not in names
    return lambda value: (
        type(value) in types or (whole_floats and type(value) is float and value.is_integer())
    )


def _enum(values: Any, schema: Any) -> Check:
    if not all(type(item) is str for item in values):
        raise UnsupportedSchema("enum of values that are not all text")
    allowed = frozenset(values)
    return lambda value: type(value) is str and value in allowed


def _const(const: Any, schema: Any) -> Check:
    if const is None or type(const) is bool:
        return lambda value: value is const
    if type(const) is str:
        return lambda value: type(value) is str and value == const
    if type(const) in (int, float):
        return lambda value: type(value) in (int, float) and value == const
    raise UnsupportedSchema(f"const {const!r:.60}")


def _properties(properties: Any, schema: Any) -> Check:
    if "patternProperties" in schema:
        raise UnsupportedSchema("patternProperties")
    checks = {name: _compile(sub) for name, sub in properties.items()}
    extra = schema.get("additionalProperties", True)
    others = None if extra is True else _compile(extra)

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return True
        for name, item in value.items():
            sub = checks.get(name, others)
            if sub is not None and not sub(item):
                return False
        return True

    return check


def _additional(extra: Any, schema: Any) -> Check | None:
    if "properties" in schema:
        return None  # checked with the properties
    return _properties({}, schema)


def _required(names: Any, schema: Any) -> Check:
    return lambda value: type(value) is not dict or all(name in value for name in names)


def _property_names(names: Any, schema: Any) -> Check:
    check = _compile(names)
    return lambda value: type(value) is not dict or all(check(name) for name in value)


def _dependent_required(dependencies: Any, schema: Any) -> Check:
    def check(value: Any) -> bool:
        if type(value) is not dict:
            return True
        return all(
            all(other in value for other in needed)
            for name, needed in dependencies.items()
            if name in value
        )

    return check


def _dependent_schemas(dependencies: Any, schema: Any) -> Check:
    checks = {name: _compile(sub) for name, sub in dependencies.items()}

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return True
        return all(sub(value) for name, sub in checks.items() if name in value)

    return check


def _min_properties(least: Any, schema: Any) -> Check:
    return lambda value: type(value) is not dict or len(value) >= least


def _items(items: Any, schema: Any) -> Check:
    if "prefixItems" in schema:
        raise UnsupportedSchema("prefixItems")
    check = _compile(items)
    return lambda value: type(value) is not list or all(check(item) for item in value)


def _min_items(least: Any, schema: Any) -> Check:
    return lambda value: type(value) is not list or len(value) >= least


def _max_items(most: Any, schema: Any) -> Check:
    return lambda value: type(value) is not list or len(value) <= most


def _pattern(pattern: Any, schema: Any) -> Check:
    if "(?" in pattern or not _PLAIN_PATTERN.fullmatch(pattern) or pattern_error(pattern):
        return lambda value: type(value) is not str or search(pattern, value)
    plain = re.compile(pattern)

    def check(value: Any) -> bool:
        if type(value) is not str:
            return True
        if value.isascii() and "\n" not in value:
            return plain.search(value) is not None
        return search(pattern, value)

    return check


def _min_length(least: Any, schema: Any) -> Check:
    return lambda value: type(value) is not str or len(value) >= least


def _max_length(most: Any, schema: Any) -> Check:
    return lambda value: type(value) is not str or len(value) <= most


def _number(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Check]:
    def build(bound: Any, schema: Any) -> Check:
        return lambda value: type(value) not in (int, float) or compare(value, bound)

    return build


def _all_of(schemas: Any, schema: Any) -> Check:
    checks = [_compile(sub) for sub in schemas]
    return lambda value: all(check(value) for check in checks)


def _any_of(schemas: Any, schema: Any) -> Check:
    checks = [_compile(sub) for sub in schemas]
    return lambda value: any(check(value) for check in checks)


def _one_of(schemas: Any, schema: Any) -> Check:
    checks = [_compile(sub) for sub in schemas]
    return lambda value: sum(1 for check in checks if check(value)) == 1


def _not(sub: Any, schema: Any) -> Check:
    check = _compile(sub)
    return lambda value: not check(value)


def _if(condition: Any, schema: Any) -> Check:
    test = _compile(condition)
    then, otherwise = _compile(schema.get("then", True)), _compile(schema.get("else", True))
    return lambda value: then(value) if test(value) else otherwise(value)


_KEYWORDS: Mapping[str, Callable[[Any, Any], Check | None]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "propertyNames": _property_names,
    "dependentRequired": _dependent_required,
    "dependentSchemas": _dependent_schemas,
    "minProperties": _min_properties,
    "items": _items,
    "minItems": _min_items,
    "maxItems": _max_items,
    "pattern": _pattern,
    "minLength": _min_length,
    "maxLength": _max_length,
    # each a failure as jsonschema words it, negated: NaN fails none of them
    "minimum": _number(lambda value, bound: not value < bound),
    "maximum": _number(lambda value, bound: not value > bound),
    "exclusiveMinimum": _number(lambda value, bound: not value <= bound),
    "exclusiveMaximum": _number(lambda value, bound: not value >= bound),
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
}
