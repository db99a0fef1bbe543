"""promptfoo's output ``transform`` (an assertion's, a test's ``options.transform``,
defaultTest's) applied to the checks an assertion became.

promptfoo runs the JavaScript expression on the output and checks what it returns; evalsite
checks the answer as it is. Only the shapes whose meaning a check has exactly translate:

- ``output.trim()``: nothing to do (evalsite's checks read the trimmed answer);
- ``output.toLowerCase()`` (with or without ``.trim()``): the text checks with
  ``case_sensitive: false``, when the value they compare is lower case (promptfoo compares
  it with the lower-cased output as written); length and JSON-validity checks unchanged;
- ``JSON.parse(output).a.b``: an ``equals`` becomes ``json_path`` ``$.a.b`` equals the value;
  ``JSON.parse(output)`` alone leaves ``is-json`` / ``contains-json`` (and their schema) as
  they are, since evalsite's JSON checks parse the answer themselves.

Anything else (``output[0].function.name``, a function body, a ``file://`` script) has no
place in evalsite's checks: the checks it modifies are left out and listed with it, never
kept testing the untransformed answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Transform", "apply", "compose", "parsed_whole", "read"]

_KEY = r"[A-Za-z_$][A-Za-z0-9_$]*"
_LOWER = re.compile(r"output(?:\.trim\(\))?\.toLowerCase\(\)(?:\.trim\(\))?")
_JSON = re.compile(r"JSON\.parse\(\s*output\s*\)(?P<path>(?:\." + _KEY + r")*)")
JSON_KINDS = ("is-json", "contains-json")
TEXT_KINDS = ("equals", "contains", "not_contains", "one_of", "regex")
UNCHANGED_BY_CASE = ("max_chars", "min_chars", "json_valid")
NO_PLACE = (
    "evalsite checks the answer as it is and has no place for this expression (only "
    "output.trim(), output.toLowerCase() and JSON.parse(output).path translate)"
)


@dataclass(frozen=True)
class Transform:
    """A transform as written and what it is: ``same`` (nothing to do), ``lower``,
    ``json`` (with ``path``), or ``other`` (no evalsite equivalent)."""

    written: str
    kind: str
    path: str = ""


SAME = Transform("", "same")


def read(value: Any) -> Transform:
    """The transform ``value`` is (None, the absence of one, is :data:`SAME`)."""
    if value is None:
        return SAME
    written = str(value)
    body = re.sub(r"^return\s+", "", written.strip()).rstrip(";").strip()
    if body in {"output", "output.trim()"}:
        return Transform(written, "same")
    if _LOWER.fullmatch(body):
        return Transform(written, "lower")
    match = _JSON.fullmatch(body)
    if match is not None:
        return Transform(written, "json", "$" + match["path"])
    return Transform(written, "other")


def parsed_whole(transform: Transform) -> bool:
    """Whether ``transform`` is ``JSON.parse(output)``: the answer's JSON, as evalsite's
    schema and JSON checks read it."""
    return transform.kind == "json" and transform.path == "$"


def compose(outer: Transform, inner: Transform) -> Transform:
    """``inner`` (an assertion's) applied after ``outer`` (its test's), as promptfoo does;
    ``other`` unless one of the two changes nothing or both lower-case."""
    if outer.kind == "same":
        return inner
    if inner.kind == "same" or (outer.kind == inner.kind == "lower"):
        return outer
    return Transform(f"{outer.written} then {inner.written}", "other")


def apply(
    transform: Transform, kind: str, value: Any, checks: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]] | None, str]:
    """The checks of promptfoo assertion ``kind`` (with ``value``) once ``transform`` is
    applied, or None and why they do not translate."""
    if transform.kind == "same":
        return checks, ""
    if transform.kind == "json":
        if transform.path == "$" and kind in JSON_KINDS:
            return checks, ""
        if kind == "equals" and _scalar(value):
            return [{"json_path": {"path": transform.path, "equals": value}}], ""
        return None, f"only an equals reads the value at {transform.path} as a json_path check"
    if transform.kind == "lower":
        out = [_folded(check) for check in checks]
        if all(check is not None for check in out):
            return [check for check in out if check is not None], ""
        return None, (
            "its value has capitals, which promptfoo's lower-cased output never holds (or "
            "it is a check lower-casing changes): no evalsite check reads it the same way"
        )
    return None, NO_PLACE


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _folded(check: dict[str, Any]) -> dict[str, Any] | None:
    """``check`` reading the lower-cased answer, or None when no evalsite check does."""
    kind = next((k for k in check if k in TEXT_KINDS + UNCHANGED_BY_CASE), None)
    if kind in UNCHANGED_BY_CASE:
        return check
    if kind is None:
        return None
    values = check[kind] if isinstance(check[kind], list) else [check[kind]]
    if kind == "regex":  # an escape (\A, \D) is no capital it looks for
        values = [re.sub(r"\\[A-Za-z]", "", str(v)) for v in values]
    if not all(isinstance(v, str) and v == v.lower() for v in values):
        return None
    return {**check, "case_sensitive": False}
