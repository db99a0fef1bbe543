"""Deterministic checks of one answer (SPEC §7.2); see docs/checks.md for every kind.

What each kind reads:

- ``equals``, ``contains``, ``not_contains``, ``one_of``, ``regex`` (the *text checks*, the
  ones that take ``case_sensitive``): :func:`~evalsite.core.scoring.fences.checked_text`,
  the trimmed answer or the trimmed inside of its first fenced block. ``regex`` searches
  anywhere, with RE2 (:mod:`~evalsite.core.patterns`: linear in the text; a pattern RE2
  cannot compile fails its check with the reason); ``case_sensitive: false`` compares
  casefolded text and matches the regex without case.
- ``max_chars`` / ``min_chars``: the whole trimmed answer, counted in code points, since a
  length budget is about the whole reply, prose around a block included.
- ``exact_match`` (evalblink's): the whole trimmed answer equals the trimmed value, compared
  casefolded; a fenced block or prose around the label fails it, as in evalblink.
- ``json_path``: the answer's JSON, parsed as for the schema verdict. ``equals`` compares
  JSON values: ``96`` equals ``96.0``, but ``true`` never equals ``1``.
- ``json_valid``: the answer's JSON, found as for the schema verdict, parses.
- ``python``: ``function(answer_text, case_vars)`` with the whole trimmed answer, returning
  a bool or ``(bool, note)``. Anything else it does (an import error, an exception, another
  return value) is a failed check with a note, never a crash.

A check with ``read: evalpin`` reads evalpin's text instead, whatever its kind
(:func:`~evalsite.core.scoring.evalpin.evalpin_text`), its JSON parsed from that text alone;
``json_path`` with ``compare: json_spelling`` compares numbers by their JSON spelling.

A check value with a ``{{name}}`` placeholder is rendered with the case's vars first, in
the suite's templating (:mod:`~evalsite.core.case_texts`; a regex gets each var escaped); a
value that cannot render fails its check with the reason, never a crash.

All checks run, every result is kept, and the first failing one's note is the answer's.
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from evalsite.core.case_texts import RenderError, rendered_check
from evalsite.core.patterns import PatternError, search
from evalsite.core.scoring.evalpin import JsonNumber, evalpin_text, load_spelled, same_spelling
from evalsite.core.scoring.fences import checked_text, fenced_blocks
from evalsite.core.scoring.json_answer import (
    MISSING,
    JsonAnswer,
    json_path_value,
    parse_json_answer,
)
from evalsite.core.suite_schema import CHECK_KINDS

__all__ = [
    "CheckResult", "ChecksResult", "PYTHON_NOT_ALLOWED", "python_check_error", "run_checks",
]  # fmt: skip

PYTHON_NOT_ALLOWED = "python checks are only allowed for suites loaded from the filesystem"
SHOWN = 60  # characters of the answer or an expected value quoted in a note
_IMPORT_LOCK = threading.Lock()


@dataclass(frozen=True)
class CheckResult:
    kind: str
    passed: bool
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "passed": self.passed, "note": self.note}


@dataclass(frozen=True)
class ChecksResult:
    """``passed`` when every check passed (and when there are none)."""

    passed: bool
    results: tuple[CheckResult, ...] = ()
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        results = [result.to_dict() for result in self.results]
        return {"passed": self.passed, "results": results, "note": self.note}


@dataclass(frozen=True)
class _Answer:
    trimmed: str
    text: str  # what the text checks read
    strict_json: bool = False  # read: evalpin - the JSON is the whole text, nothing else
    vars: Mapping[str, Any] = field(default_factory=dict)
    allow_python: bool = False
    python_path: tuple[str, ...] = ()
    raw: str = ""  # the answer as given, for read: evalpin
    templating: str = "default"  # the suite's: how check values render with the vars


def run_checks(
    answer: str,
    checks: Sequence[Mapping[str, Any]],
    *,
    allow_python: bool = False,
    case_vars: Mapping[str, Any] | None = None,
    python_path: Sequence[str] = (),
    templating: str = "default",
) -> ChecksResult:
    """Run every check on ``answer``; the note is the first failing check's.

    ``allow_python`` is the call site's decision (true only for suites loaded from the
    filesystem); when false a ``python`` check fails with :data:`PYTHON_NOT_ALLOWED`.
    ``python_path`` lists folders searched first for a python check's module (the suite's
    folder, typically). Check values render with ``case_vars`` in ``templating`` (the
    suite's: ``default`` or ``jinja2``).
    """
    trimmed = answer.strip()
    context = _Answer(
        trimmed,
        checked_text(trimmed),
        vars=case_vars or {},
        allow_python=allow_python,
        python_path=tuple(python_path),
        raw=answer,
        templating=templating,
    )
    results = tuple(_run_one(check, context) for check in checks)
    failed = next((result for result in results if not result.passed), None)
    return ChecksResult(failed is None, results, failed.note if failed else None)


def _run_one(check: Mapping[str, Any], answer: _Answer) -> CheckResult:
    kinds = [kind for kind in CHECK_KINDS if kind in check]
    if len(kinds) != 1:
        return CheckResult("invalid", False, f"a check needs exactly one of {CHECK_KINDS}")
    kind = kinds[0]
    try:
        check = rendered_check(check, answer.vars, answer.templating)
    except RenderError as error:  # a version stored before validation rendered its values
        return CheckResult(kind, False, f"{kind} cannot render for this case: {error}")
    if check.get("read") == "evalpin":
        text = evalpin_text(answer.raw)
        answer = replace(answer, trimmed=text, text=text, strict_json=True)
    try:
        passed, note = _KINDS[kind](check[kind], answer, check.get("case_sensitive", True))
    except Exception as error:  # a malformed check (validation refuses these first)
        passed, note = False, f"{kind} check is malformed: {error}"
    return CheckResult(kind, passed, None if passed else note)


Outcome = tuple[bool, str | None]


def _fold(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.casefold()


def _equals(expected: str, answer: _Answer, case_sensitive: bool) -> Outcome:
    passed = _fold(answer.text, case_sensitive) == _fold(expected, case_sensitive)
    return passed, f"expected exactly {_show(expected)}, got {_show(answer.text)}"


def _contains(expected: str, answer: _Answer, case_sensitive: bool) -> Outcome:
    passed = _fold(expected, case_sensitive) in _fold(answer.text, case_sensitive)
    return passed, f"does not contain {_show(expected)}"


def _not_contains(forbidden: str, answer: _Answer, case_sensitive: bool) -> Outcome:
    passed = _fold(forbidden, case_sensitive) not in _fold(answer.text, case_sensitive)
    return passed, f"contains {_show(forbidden)}, which it must not"


def _one_of(options: Sequence[str], answer: _Answer, case_sensitive: bool) -> Outcome:
    allowed = {_fold(option, case_sensitive) for option in options}
    passed = _fold(answer.text, case_sensitive) in allowed
    listed = ", ".join(_show(option) for option in options[:10])
    return passed, f"{_show(answer.text)} is not one of {listed}"


def _regex(pattern: str, answer: _Answer, case_sensitive: bool) -> Outcome:
    try:
        passed = search(pattern, answer.text, case_sensitive=case_sensitive)
    except PatternError as error:  # stored before validation refused it
        return False, f"the regex {_show(pattern)} cannot be used: {error}"
    return passed, f"no match for the regex {_show(pattern)}"


def _max_chars(limit: int, answer: _Answer, _: bool) -> Outcome:
    count = len(answer.trimmed)
    return count <= limit, f"{count} characters, more than the maximum of {limit}"


def _min_chars(limit: int, answer: _Answer, _: bool) -> Outcome:
    count = len(answer.trimmed)
    return count >= limit, f"{count} characters, fewer than the minimum of {limit}"


def _exact_match(expected: str, answer: _Answer, _: bool) -> Outcome:
    passed = answer.trimmed.casefold() == expected.strip().casefold()
    return passed, f"expected {_show(expected.strip())} (any case), got {_show(answer.trimmed)}"


def _json_valid(_: Any, answer: _Answer, __: bool) -> Outcome:
    parsed = _answer_json(answer, spelled=False)
    return parsed.ok, f"the answer is {parsed.error}"


def _json_path(spec: Mapping[str, Any], answer: _Answer, _: bool) -> Outcome:
    path, expected = spec["path"], spec["equals"]
    spelled = spec.get("compare") == "json_spelling"
    parsed = _answer_json(answer, spelled=spelled)
    if not parsed.ok:
        return False, f"{path}: the answer is {parsed.error}"
    found = json_path_value(parsed.value, path)
    if found is MISSING:
        return False, f"{path}: not found in the answer"
    if spelled:  # `equals` is the JSON scalar as spelled, e.g. '1.0' or '"Ana"'
        wanted = load_spelled(expected).value
        passed = same_spelling(found, wanted)
        return passed, f"{path} is {_show_json(found)}, expected {expected}"
    return _same_json(found, expected), f"{path} is {_show(found)}, expected {_show(expected)}"


def _answer_json(answer: _Answer, *, spelled: bool) -> JsonAnswer:
    """The answer's JSON: the whole text only under read: evalpin, else the whole trimmed
    answer or its first fenced block; numbers kept as spelled when ``spelled``."""
    if answer.strict_json:
        return load_spelled(answer.trimmed) if spelled else _loads_whole(answer.trimmed)
    if not spelled:
        return parse_json_answer(answer.trimmed)
    whole = load_spelled(answer.trimmed)
    blocks = [] if whole.ok else fenced_blocks(answer.trimmed)
    return load_spelled(blocks[0].code) if blocks else whole


def _loads_whole(text: str) -> JsonAnswer:
    parsed = load_spelled(text)  # the same parser; plain values for the value comparison
    return parse_json_answer(text) if parsed.ok else parsed


def _show_json(value: Any) -> str:
    if isinstance(value, list | dict):
        return "not a scalar"
    return _cut(json.dumps(value) if not isinstance(value, JsonNumber) else value.text, SHOWN)


def _same_json(found: Any, expected: Any) -> bool:
    """JSON equality: numbers by value, but a boolean is never a number."""
    if isinstance(found, bool) or isinstance(expected, bool):
        return type(found) is type(expected) and found == expected
    if isinstance(found, int | float) and isinstance(expected, int | float):
        return found == expected
    return type(found) is type(expected) and found == expected


def _python(reference: str, answer: _Answer, _: bool) -> Outcome:
    if not answer.allow_python:
        return False, PYTHON_NOT_ALLOWED
    try:
        function = _load_function(reference, answer.python_path)
    except Exception as error:
        return False, f"python check {reference}: cannot load it: {_error(error)}"
    try:
        returned = function(answer.trimmed, dict(answer.vars))
    except (Exception, SystemExit) as error:
        return False, f"python check {reference} raised {_error(error)}"
    return _python_outcome(reference, returned)


def _python_outcome(reference: str, returned: Any) -> Outcome:
    if isinstance(returned, bool):
        return returned, f"python check {reference} returned False"
    if (
        isinstance(returned, tuple)
        and len(returned) == 2
        and isinstance(returned[0], bool)
        and isinstance(returned[1], str | None)
    ):
        return returned[0], returned[1] or f"python check {reference} returned False"
    return False, (
        f"python check {reference} returned {_show(returned)}; "
        "it must return a bool or a (bool, note) pair"
    )


def python_check_error(reference: str, python_path: Sequence[str] = ()) -> str | None:
    """Why the python check ``module:function`` cannot be called (its module does not
    import, or has no such function), or None: for validation, before any answer is paid
    for. Importing runs the module's top level, as scoring would; the module stays imported."""
    try:
        _load_function(reference, tuple(python_path))
    except (Exception, SystemExit) as error:
        return f"cannot import {reference}: {_error(error)}"
    return None


def load_python(reference: str, python_path: tuple[str, ...]) -> Callable[..., Any]:
    """The function named by ``module:function``, imported as a python check's is (the
    folders of ``python_path`` searched first); a datasource's callable too."""
    return _load_function(reference, python_path)


def _load_function(reference: str, python_path: tuple[str, ...]) -> Callable[..., Any]:
    """The function named by ``module:function``, with ``python_path`` searched first."""
    module_name, _, name = reference.partition(":")
    with _IMPORT_LOCK:
        added = [folder for folder in python_path if folder not in sys.path]
        sys.path[:0] = added
        try:
            module = importlib.import_module(module_name)
        finally:
            for folder in added:
                sys.path.remove(folder)
    function = getattr(module, name, None)
    if not callable(function):
        raise LookupError(f"module {module_name!r} has no function {name!r}")
    return cast("Callable[..., Any]", function)


def _error(error: BaseException) -> str:
    return f"{type(error).__name__}: {_cut(str(error), 200)}"


def _show(value: Any) -> str:
    return _cut(repr(value), SHOWN)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_KINDS: dict[str, Callable[[Any, _Answer, bool], Outcome]] = {
    "equals": _equals,
    "contains": _contains,
    "not_contains": _not_contains,
    "one_of": _one_of,
    "regex": _regex,
    "max_chars": _max_chars,
    "min_chars": _min_chars,
    "exact_match": _exact_match,
    "json_path": _json_path,
    "json_valid": _json_valid,
    "python": _python,
}
