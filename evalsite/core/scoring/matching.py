"""Weighted match of an answer that is a JSON list of labelled items (evalblink's weighted
match; docs/checks.md, "Weighted match").

A task's ``weighted_match: {label, threshold, fields}`` names the field that labels an item,
the per-case pass threshold (0-1) and a weight per field; a case's ``expected`` is the
expected list. Expected and answered items are paired by label (trimmed, case-insensitive
for text, by value for numbers). Each field scores 0-1:

- the label field: F1 of the labels, 2PR / (P + R), with precision = paired items / answered
  items (a label answered twice pairs once, so the repeat lowers precision) and recall =
  paired items / expected items;
- a field with ``tolerance``: the share of expected items whose paired item's number is
  within ``tolerance`` of the expected one (inclusive, :data:`EPSILON` forgiven for float
  rounding);
- any other field: the share of expected items whose paired item holds an equal JSON value.

An expected item with no pair scores 0 on every field. The score is the weighted mean of the
fields' scores (weights are normalised by their sum) and passes at or above the threshold.
An answer that is not a JSON list of objects scores 0 and fails, with a note: the model's
failure, not an error of the run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalsite.core.scoring.json_answer import parse_json_answer

__all__ = ["EPSILON", "MatchResult", "label_key", "same_value", "weighted_match"]

EPSILON = 1e-9  # |answered - expected| <= tolerance + EPSILON: 0.9 vs 0.7 is within 0.2


@dataclass(frozen=True)
class MatchResult:
    """``fields`` maps each field to its 0-1 score; ``note`` says why a score is low when the
    answer could not be read as a list of objects."""

    score: float
    passed: bool
    fields: Mapping[str, float] = field(default_factory=dict)
    note: str | None = None

    def detail(self) -> dict[str, Any]:
        return {"fields": dict(self.fields), "note": self.note}


def label_key(value: Any) -> Any:
    """What two labels are compared by: trimmed casefolded text, numbers by value; None for
    a value that cannot be a label (missing, null, a list or an object)."""
    if isinstance(value, str):
        return ("text", value.strip().casefold())
    if isinstance(value, bool):
        return ("bool", value)
    number = _number(value)
    return None if number is None else ("number", number)


def _number(value: Any) -> float | None:
    """A JSON number as a finite float; None for anything else (a boolean, an integer too
    large for a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def same_value(found: Any, expected: Any) -> bool:
    """JSON equality: numbers by value, but a boolean is never a number."""
    if isinstance(found, bool) or isinstance(expected, bool):
        return type(found) is type(expected) and found == expected
    if isinstance(found, int | float) and isinstance(expected, int | float):
        return found == expected
    return type(found) is type(expected) and found == expected


def weighted_match(
    answer: str, expected: Sequence[Mapping[str, Any]], spec: Mapping[str, Any]
) -> MatchResult:
    """The weighted match of ``answer`` against ``expected`` under the task's ``spec``
    (``label``, ``threshold``, ``fields``), which suite validation has already checked."""
    fields: Mapping[str, Mapping[str, Any]] = spec["fields"]
    threshold = float(spec["threshold"])
    items, note = _answered_items(answer)
    if items is None:
        return MatchResult(0.0, False, {name: 0.0 for name in fields}, note)
    label = spec["label"]
    pairs = _pairs(expected, items, label)
    scores = {
        name: _field_score(name, options, label, expected, items, pairs)
        for name, options in fields.items()
    }
    total = sum(float(options["weight"]) for options in fields.values())
    score = sum(scores[name] * float(fields[name]["weight"]) for name in fields) / total
    return MatchResult(score, score >= threshold, scores)


def _answered_items(answer: str) -> tuple[list[Mapping[str, Any]] | None, str | None]:
    parsed = parse_json_answer(answer)
    if not parsed.ok:
        return None, f"the answer is {parsed.error}"
    value = parsed.value
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        return None, f"the answer is JSON but not a list of objects (it is {_kind(value)})"
    return value, None


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list holding something other than objects"
    names = {dict: "an object", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _pairs(
    expected: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]], label: str
) -> dict[int, Mapping[str, Any]]:
    """Expected item index → the first answered item with its label (each answered item
    pairs at most once)."""
    by_label: dict[Any, Mapping[str, Any]] = {}
    for item in items:
        key = label_key(item.get(label))
        if key is not None:
            by_label.setdefault(key, item)
    pairs = {}
    for index, wanted in enumerate(expected):
        key = label_key(wanted.get(label))
        if key is not None and key in by_label:
            pairs[index] = by_label.pop(key)
    return pairs


def _field_score(
    name: str,
    options: Mapping[str, Any],
    label: str,
    expected: Sequence[Mapping[str, Any]],
    items: Sequence[Mapping[str, Any]],
    pairs: Mapping[int, Mapping[str, Any]],
) -> float:
    if not expected:
        return 0.0
    if name == label:
        return _f1(len(pairs), len(items), len(expected))
    tolerance = options.get("tolerance")
    hits = sum(
        _within(pairs[i].get(name), wanted.get(name), tolerance)
        if tolerance is not None
        else same_value(pairs[i].get(name, _ABSENT), wanted.get(name))
        for i, wanted in enumerate(expected)
        if i in pairs
    )
    return hits / len(expected)


_ABSENT = object()  # an answered item without the field equals nothing


def _f1(paired: int, answered: int, expected: int) -> float:
    if paired == 0:
        return 0.0
    precision, recall = paired / answered, paired / expected
    return 2 * precision * recall / (precision + recall)


def _within(found: Any, expected: Any, tolerance: float) -> bool:
    found, expected = _number(found), _number(expected)
    if found is None or expected is None:
        return False
    return bool(abs(found - expected) <= float(tolerance) + EPSILON)


# --- validation (suite_rules reports these at their paths) ----------------------------------

Where = tuple[str | int, ...]


def spec_problems(spec: Mapping[str, Any]) -> list[tuple[Where, str]]:
    """What the JSON Schema cannot say about a ``weighted_match`` block, as (path inside
    the block, message): the label must be one of the fields, without a tolerance, and some
    weight must be above 0."""
    label, fields = spec.get("label"), spec.get("fields")
    if not isinstance(label, str) or not isinstance(fields, dict):
        return []  # the schema already refused the block
    problems: list[tuple[Where, str]] = []
    if label not in fields:
        message = f"fields must include the label field '{label}' (its weight is the labels' F1)"
        problems.append((("fields",), message))
    elif isinstance(fields[label], dict) and "tolerance" in fields[label]:
        message = "the label field is matched by label, so it takes no tolerance"
        problems.append((("fields", label, "tolerance"), message))
    weights = [options.get("weight") for options in fields.values() if isinstance(options, dict)]
    numbers = [w for w in weights if isinstance(w, int | float) and not isinstance(w, bool)]
    if len(numbers) == len(fields) and not any(w > 0 for w in numbers):
        problems.append((("fields",), "at least one field needs a weight above 0"))
    return problems


def expected_problems(expected: Any, spec: Mapping[str, Any]) -> list[tuple[Where, str]]:
    """Each expected item needs a scalar label (text, number or boolean; no repeats), a
    number for each field with a tolerance and a value for every other field; as (path
    inside ``expected``, message)."""
    label: Any = spec.get("label")
    fields = spec.get("fields")
    if not isinstance(expected, list) or not isinstance(fields, dict) or label not in fields:
        return []  # the schema or spec_problems already refused the block
    problems: list[tuple[Where, str]] = []
    first: dict[Any, int] = {}
    for k, item in enumerate(expected):
        if not isinstance(item, dict):
            continue
        key = label_key(item.get(label))
        if key is None:
            message = f"each expected item needs a text or number '{label}' (its label)"
            problems.append(((k, label) if label in item else (k,), message))
        elif key in first:
            message = f"duplicate label {item[label]!r} in expected (first at item {first[key]})"
            problems.append(((k, label), message))
        else:
            first[key] = k
        problems += _item_field_problems(k, item, label, fields)
    return problems


def _item_field_problems(
    k: int, item: Mapping[str, Any], label: str, fields: Mapping[str, Any]
) -> list[tuple[Where, str]]:
    problems: list[tuple[Where, str]] = []
    for name, options in fields.items():
        if name == label:
            continue
        if name not in item:
            problems.append(((k,), f"missing '{name}' (weighted_match compares every field)"))
        elif isinstance(options, dict) and "tolerance" in options and _number(item[name]) is None:
            message = f"'{name}' must be a number: the field is compared within a tolerance"
            problems.append(((k, name), message))
    return problems
