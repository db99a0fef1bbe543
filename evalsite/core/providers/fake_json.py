"""JSON values made from a JSON Schema for the fake adapter: valid ones, and invalid ones.

:func:`generate` supports ``type`` (one or a list), ``enum``, ``const``, ``properties``,
``required``, ``additionalProperties`` (as a schema for required names it does not
declare), ``minProperties``, ``items`` / ``prefixItems``, ``minItems`` / ``maxItems`` /
``uniqueItems``, ``minimum`` / ``maximum`` / ``exclusiveMinimum`` / ``exclusiveMaximum`` /
``multipleOf``, ``minLength`` / ``maxLength``, common ``format`` values, ``allOf`` /
``anyOf`` / ``oneOf`` and local ``$ref``. A ``pattern`` is not honoured, so a string with
one may fail validation. Everything is drawn from the ``random.Random`` it is given, which
the fake seeds from the request hash.

:func:`violate` returns a value the schema rejects (a required property dropped, an
undeclared one added, or a value of the wrong type), or None when the schema accepts
everything it tried.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema

from evalsite.core.json_schemas import validator

__all__ = ["generate", "is_valid", "violate"]

MAX_DEPTH = 6
WORDS = (
    "billing", "refund", "account", "shipping", "priority", "summary", "invoice", "support",
    "delivery", "request", "update", "status", "review", "answer", "result", "customer",
)  # fmt: skip
WRONG_TYPES: tuple[Any, ...] = ("not the expected value", 12345, 0.5, [], {}, None, True)


def generate(schema: Any, rng: random.Random, root: Any = None, depth: int = 0) -> Any:
    """A value valid against ``schema`` (best effort; see the module docstring)."""
    root = schema if root is None else root
    if schema is True or not isinstance(schema, Mapping):
        return "ok"
    if "$ref" in schema and depth < MAX_DEPTH:
        return generate(_resolve(root, schema["$ref"]), rng, root, depth + 1)
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return copy.deepcopy(rng.choice(schema["enum"]))
    merged = _merge_combinators(schema, rng)
    if merged is not None:
        return generate(merged, rng, root, depth + 1)
    kind = _pick_type(schema, rng)
    return _GENERATORS.get(kind, _string)(schema, rng, root, depth)


def _resolve(root: Any, ref: Any) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#"):
        return {}
    node = root
    for part in ref.lstrip("#").strip("/").split("/") if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if node is not None else {}


def _merge_combinators(schema: Mapping[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """allOf merged in, one anyOf/oneOf branch merged in; None when there is none."""
    keys = [key for key in ("allOf", "anyOf", "oneOf") if isinstance(schema.get(key), list)]
    if not keys:
        return None
    merged = {key: value for key, value in schema.items() if key not in keys}
    for key in keys:
        parts = schema[key] if key == "allOf" else [rng.choice(schema[key])] if schema[key] else []
        for part in parts:
            if isinstance(part, Mapping):
                merged = _merge(merged, part)
    return merged


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if key == "properties" and isinstance(out.get(key), Mapping):
            out[key] = {**out[key], **value}
        elif key == "required" and isinstance(out.get(key), list):
            out[key] = list(dict.fromkeys([*out[key], *value]))
        else:
            out[key] = value
    return out


def _pick_type(schema: Mapping[str, Any], rng: random.Random) -> str:
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        concrete = [k for k in kind if k != "null"]
        return rng.choice(concrete) if concrete else "null"
    if isinstance(kind, str):
        return kind
    hints = (
        ("object", ("properties", "required", "additionalProperties", "minProperties")),
        ("array", ("items", "prefixItems", "minItems", "maxItems")),
        ("number", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
    )
    return next((name for name, keys in hints if any(k in schema for k in keys)), "string")


def _object(schema: Mapping[str, Any], rng: random.Random, root: Any, depth: int) -> Any:
    properties: Any = (
        schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    )
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    extra = schema.get("additionalProperties", {})
    out: dict[str, Any] = {}
    for name, sub in properties.items():
        if name in required or (depth < MAX_DEPTH - 1 and rng.random() < 0.5):
            out[name] = generate(sub, rng, root, depth + 1)
    for name in required:
        if name not in out:
            out[name] = generate(extra if isinstance(extra, Mapping) else {}, rng, root, depth + 1)
    for name, sub in properties.items():
        if len(out) >= int(schema.get("minProperties") or 0):
            break
        out.setdefault(name, generate(sub, rng, root, depth + 1))
    return out


def _array(schema: Mapping[str, Any], rng: random.Random, root: Any, depth: int) -> Any:
    prefix: Any = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
    items = schema.get("items", {})
    low = int(schema.get("minItems") or 0)
    high = schema.get("maxItems")
    high = max(low, int(high) if isinstance(high, int) else low + 3)
    if items is False:
        high = min(high, len(prefix))
    count = low if depth >= MAX_DEPTH - 1 else rng.randint(min(max(low, 1), high), high)
    out: list[Any] = []
    seen: set[str] = set()
    for _attempt in range(count * 5 + 5):
        if len(out) >= count:
            break
        sub = prefix[len(out)] if len(out) < len(prefix) else items
        value = generate(sub, rng, root, depth + 1)
        marker = repr(value)
        if schema.get("uniqueItems") and marker in seen:
            continue
        seen.add(marker)
        out.append(value)
    return out


def _string(schema: Mapping[str, Any], rng: random.Random, root: Any, depth: int) -> Any:
    formats = {
        "date": lambda: f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "date-time": lambda: f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T12:00:00Z",
        "email": lambda: f"{rng.choice(WORDS)}@example.com",
        "uri": lambda: f"https://example.com/{rng.choice(WORDS)}",
        "uuid": lambda: f"{rng.getrandbits(32):08x}-0000-4000-8000-{rng.getrandbits(48):012x}",
    }
    maker = formats.get(str(schema.get("format")))
    text = maker() if maker else " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
    low = int(schema.get("minLength") or 0)
    while len(text) < low:
        text += " " + rng.choice(WORDS)
    high = schema.get("maxLength")
    return text[: int(high)] if isinstance(high, int) else text


def _bounds(schema: Mapping[str, Any], step: float) -> tuple[float, float]:
    """Inclusive (low, high) from minimum/maximum and exclusive bounds (number or draft-4 bool)."""
    low, high = schema.get("minimum"), schema.get("maximum")
    exclusive_low, exclusive_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(exclusive_low, bool):
        low = low + step if exclusive_low and low is not None else low
    elif isinstance(exclusive_low, int | float):
        low = max(low, exclusive_low + step) if low is not None else exclusive_low + step
    if isinstance(exclusive_high, bool):
        high = high - step if exclusive_high and high is not None else high
    elif isinstance(exclusive_high, int | float):
        high = min(high, exclusive_high - step) if high is not None else exclusive_high - step
    if low is None:
        low = 0 if high is None or high >= 0 else high - 100
    if high is None:
        high = low + 100
    return float(low), float(high)


def _integer(schema: Mapping[str, Any], rng: random.Random, root: Any, depth: int) -> Any:
    low, high = _bounds(schema, 1)
    low_i, high_i = math.ceil(low), math.floor(high)
    multiple = schema.get("multipleOf")
    if isinstance(multiple, int) and multiple > 0:
        first, last = math.ceil(low_i / multiple), math.floor(high_i / multiple)
        return rng.randint(first, max(first, last)) * multiple
    return rng.randint(low_i, max(low_i, high_i))


def _number(schema: Mapping[str, Any], rng: random.Random, root: Any, depth: int) -> Any:
    if isinstance(schema.get("multipleOf"), int):
        return _integer(schema, rng, root, depth)
    low, high = _bounds(schema, 0.01)
    value = round(rng.uniform(low, high), 2)
    return value if low <= value <= high else (low + high) / 2


_GENERATORS: dict[str, Callable[[Mapping[str, Any], random.Random, Any, int], Any]] = {
    "object": _object,
    "array": _array,
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": lambda schema, rng, root, depth: rng.random() < 0.5,
    "null": lambda schema, rng, root, depth: None,
}


def is_valid(schema: Any, value: Any) -> bool:
    """True when ``value`` satisfies ``schema`` (the draft its ``$schema`` names, else 2020-12)."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return bool(validator(schema, cls).is_valid(value))


def violate(schema: Any, value: Any) -> Any | None:
    """A value ``schema`` rejects, derived from the valid ``value``; None if none was found."""
    candidates: list[Any] = []
    if isinstance(value, dict) and isinstance(schema, Mapping):
        for name in schema.get("required") or []:
            candidates.append({k: v for k, v in value.items() if k != name})
        candidates.append({**value, "unexpected_field": "surprise"})
    candidates.extend(WRONG_TYPES)
    return next((c for c in candidates if not is_valid(schema, c)), None)
