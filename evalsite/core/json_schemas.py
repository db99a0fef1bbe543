"""Validators for JSON Schemas, with every ``$ref`` kept inside the schema (SPEC §19).

Contract:

- :func:`validator` is the one way the project builds a jsonschema validator. Its registry
  retrieves nothing, so a ``$ref`` resolves only inside the schema being applied: its JSON
  pointers, ``$anchor``s and embedded ``$id``s (jsonschema adds the meta-schemas it bundles;
  validation refuses refs to those too).
  ``http:``, ``https:``, ``file:``, ``urn:`` and relative-file refs are never fetched or
  read; they fail as :class:`referencing.exceptions.Unresolvable`.
- :func:`task_schema_problems` is what suite validation reports for a task schema: the
  first meta-schema error, else every ``$ref`` / ``$dynamicRef`` that does not resolve
  inside the schema or lands on something that is not a valid schema, each at its key.
  jsonschema resolves a ``$ref`` only when an instance reaches it, so this is what keeps a
  bad one from failing a run. A relative ref to another file is refused for every origin:
  a stored suite holds its task schemas inlined, with no folder to read a second file from.
- :func:`unusable_reason` is the same check for the scoring path, cached by content.
- Messages quote the ref as written, never what it points at.
- Patterns (``pattern``, ``patternProperties``, and the ``additionalProperties`` and
  ``unevaluatedProperties`` that read them) are matched by RE2 in every validator of the
  process (:mod:`~evalsite.core.patterns`), so a schema's pattern cannot backtrack for
  minutes on an answer; the meta-schema's ``format: regex`` is RE2's too, so validation
  refuses a pattern RE2 cannot compile at its key, with RE2's reason.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker, _keywords, _legacy_keywords, _utils
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import (
    InvalidAnchor,
    NoSuchAnchor,
    NoSuchResource,
    PointerToNowhere,
    Unresolvable,
)
from referencing.jsonschema import DRAFT202012

from evalsite.core.patterns import PatternError, pattern_error, use_in_jsonschema
from evalsite.core.problems import Path

__all__ = ["REGISTRY", "task_schema_problems", "unusable_reason", "validator"]

_REF_KEYWORDS = ("$ref", "$dynamicRef")
_Located = tuple[Path, str]


def _refuse(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs field; stubs lag


REGISTRY: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]  # attrs field
use_in_jsonschema(_keywords, _legacy_keywords, _utils)  # the modules that call re.search


def validator(
    schema: Any, cls: type[Validator] = Draft202012Validator, **options: Any
) -> Validator:
    """A ``cls`` validator for ``schema`` whose ``$ref``s resolve only inside it."""
    return cls(schema, registry=REGISTRY, **options)


def _re2_compiles(instance: object) -> bool:
    reason = pattern_error(instance) if isinstance(instance, str) else None
    if reason:
        raise PatternError(reason)
    return True


@functools.cache
def _meta_validator() -> Validator:
    checker = FormatChecker(formats=Draft202012Validator.FORMAT_CHECKER.checkers)
    checker.checks("regex", raises=PatternError)(_re2_compiles)
    return validator(Draft202012Validator.META_SCHEMA, format_checker=checker)


def task_schema_problems(schema: Any) -> list[_Located]:
    """(path inside ``schema``, message) for each reason it cannot be applied; [] if none."""
    error = next(iter(_meta_validator().iter_errors(schema)), None)
    if error is not None:
        return [_meta_problem(error)]
    return _ref_problems(schema) if isinstance(schema, dict) else []


def _meta_problem(error: ValidationError) -> _Located:
    """Where ``schema`` breaks the meta-schema, and how; a pattern RE2 cannot compile is
    named by itself (a ``patternProperties`` key by its own path) with RE2's reason."""
    path = tuple(error.absolute_path)
    if isinstance(error.cause, PatternError):
        named = "propertyNames" in error.relative_schema_path
        return ((*path, str(error.instance)) if named else path), str(error.cause)
    return path, f"not a valid JSON Schema: {error.message}"


@functools.lru_cache(maxsize=64)
def _cached_reason(text: str) -> str | None:
    problems = task_schema_problems(json.loads(text))
    return problems[0][1] if problems else None


def unusable_reason(schema: Any) -> str | None:
    """The first of :func:`task_schema_problems`' messages, or None when ``schema`` is usable."""
    return _cached_reason(json.dumps(schema, default=repr))


def _unresolvable_message(ref: str, error: Exception, keyword: str = "$ref") -> str:
    """Why ``ref`` did not resolve, from the error the resolver raised for it."""
    if isinstance(error, PointerToNowhere | LookupError | ValueError):
        return f"{keyword} {ref!r} points to nothing in this schema"
    if isinstance(error, NoSuchAnchor | InvalidAnchor):
        return f"{keyword} {ref!r} names an anchor this schema does not define"
    return (
        f"{keyword} {ref!r} points outside this schema; a {keyword} may only point inside "
        "it, e.g. '#/$defs/item' (nothing is fetched or read)"
    )


def _ref_problems(schema: dict[str, Any]) -> list[_Located]:
    """Follow every ref from the schema and from each valid target it reaches."""
    paths = _node_paths(schema)
    pending = list(_subschemas(schema, REGISTRY.resolver_with_root(_resource(schema))))
    known = {id(contents) for contents, _ in pending}
    problems: list[_Located] = []
    while pending:
        contents, resolver = pending.pop()
        for keyword in _REF_KEYWORDS:
            ref = contents.get(keyword)
            if not isinstance(ref, str):
                continue
            try:
                target = resolver.lookup(ref)
            except (Unresolvable, LookupError, ValueError) as error:
                message: str | None = _unresolvable_message(ref, error, keyword)
            else:
                message = None
                if id(target.contents) not in known:  # outside the walk so far: check it too
                    message = _target_problem(ref, target)
                    more = [] if message else list(_subschemas(target.contents, target.resolver))
                    known |= {id(target.contents), *(id(each) for each, _ in more)}
                    pending += more
            if message is not None:
                problems.append(((*paths.get(id(contents), ()), keyword), message))
    return problems


def _target_problem(ref: str, target: Any) -> str | None:
    """A ref target outside the schema's own subschemas must itself be a valid schema."""
    if not isinstance(target.contents, dict | bool):
        return f"$ref {ref!r} points at something that is not a schema"
    error = next(iter(_meta_validator().iter_errors(target.contents)), None)
    return None if error is None else f"$ref {ref!r} points at an invalid schema: {error.message}"


def _resource(contents: Any) -> Resource[Any]:
    return DRAFT202012.create_resource(contents)


def _subschemas(contents: Any, resolver: Any) -> Iterator[tuple[dict[str, Any], Any]]:
    """Every mapping subschema of ``contents`` (itself included) with its resolver."""
    stack = [(_resource(contents), resolver)]
    while stack:
        resource, current = stack.pop()
        if isinstance(resource.contents, dict):
            yield resource.contents, current
            stack += [(sub, current.in_subresource(sub)) for sub in resource.subresources()]


def _node_paths(schema: Any) -> dict[int, Path]:
    """The path of every mapping in ``schema`` by identity (first place seen, iteratively)."""
    found: dict[int, Path] = {}
    stack: list[tuple[Path, Any]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            found.setdefault(id(node), path)
            stack += [((*path, key), value) for key, value in node.items()]
        elif isinstance(node, list):
            stack += [((*path, index), value) for index, value in enumerate(node)]
    return found
