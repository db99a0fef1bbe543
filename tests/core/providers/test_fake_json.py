"""Schema-valid (and deliberately invalid) JSON from JSON Schemas, checked with jsonschema."""

from __future__ import annotations

import random
from typing import Any

import pytest

from evalsite.core.providers.fake_json import generate, is_valid, violate


def random_schema(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    """A random schema built from the keywords the generator supports."""
    kinds = ["string", "integer", "number", "boolean", "null", "enum", "const"]
    if depth < 3:
        kinds += ["object", "array", "object", "anyOf"]
    kind = rng.choice(kinds)
    if kind == "object":
        names = rng.sample(["a", "b", "c", "d", "e"], rng.randint(0, 4))
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {name: random_schema(rng, depth + 1) for name in names},
            "required": rng.sample(names, rng.randint(0, len(names))),
        }
        if rng.random() < 0.5:
            schema["additionalProperties"] = False
        return schema
    if kind == "array":
        low = rng.randint(0, 3)
        return {
            "type": "array",
            "items": random_schema(rng, depth + 1),
            "minItems": low,
            "maxItems": low + rng.randint(0, 3),
        }
    if kind == "string":
        schema = {"type": "string"}
        if rng.random() < 0.5:
            low = rng.randint(0, 20)
            schema |= {"minLength": low, "maxLength": low + rng.randint(0, 10)}
        return schema
    if kind in ("integer", "number"):
        low = rng.randint(-50, 50)
        schema = {"type": kind, "minimum": low, "maximum": low + rng.randint(0, 30)}
        if rng.random() < 0.3:
            schema = {
                "type": kind,
                "exclusiveMinimum": low,
                "exclusiveMaximum": low + rng.randint(2, 30),
            }
        return schema
    if kind == "enum":
        return {"enum": rng.sample(["red", "green", 3, None, True], rng.randint(1, 4))}
    if kind == "const":
        return {"const": rng.choice(["fixed", 42, False])}
    if kind == "anyOf":
        return {"anyOf": [random_schema(rng, depth + 1), random_schema(rng, depth + 1)]}
    return {"type": kind}


SCHEMAS = [
    {"type": ["string", "null"]},
    {"type": "integer", "multipleOf": 5, "minimum": 1, "maximum": 100},
    {
        "type": "array",
        "items": {"enum": ["a", "b", "c"]},
        "minItems": 3,
        "maxItems": 3,
        "uniqueItems": True,
    },
    {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": False,
        "minItems": 2,
    },
    {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/n"}},
        "required": ["n"],
        "$defs": {"n": {"type": "integer", "minimum": 3, "maximum": 3}},
    },
    {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"required": ["b"], "properties": {"b": {"type": "boolean"}}},
        ]
    },
    {"type": "string", "format": "date"},
    {
        "type": "object",
        "minProperties": 2,
        "properties": {"x": {"type": "null"}, "y": {"type": "null"}},
    },
    {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 1,
    },
    {"properties": {"inferred": {"minimum": 2, "maximum": 4}}, "required": ["inferred"]},
    True,
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_generated_values_satisfy_the_schema(schema):
    for seed in range(30):
        value = generate(schema, random.Random(seed))
        assert is_valid(schema, value), value


def test_generated_values_satisfy_random_schemas():
    rng = random.Random(2024)
    for _ in range(1000):
        schema = random_schema(rng)
        value = generate(schema, rng)
        assert is_valid(schema, value), (schema, value)


def test_the_same_seed_gives_the_same_value():
    schema = random_schema(random.Random(5))
    assert generate(schema, random.Random(1)) == generate(schema, random.Random(1))


def test_violations_are_rejected_by_the_schema():
    rng = random.Random(11)
    for _ in range(300):
        schema = random_schema(rng)
        broken = violate(schema, generate(schema, rng))
        if broken is not None:
            assert not is_valid(schema, broken)


def test_a_missing_required_property_is_the_first_violation_tried():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    assert violate(schema, {"a": "x"}) == {}


def test_a_schema_that_accepts_anything_has_no_violation():
    assert violate({}, "anything") is None
