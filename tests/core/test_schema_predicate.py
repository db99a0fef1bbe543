"""The compiled validity check says what jsonschema says (evalsite.core.schema_predicate),
and a valid suite is never walked by jsonschema (its errors are worded for the others)."""

from __future__ import annotations

import copy
import math
import random
from pathlib import Path
from unittest import mock

import pytest

from evalsite.core import schema_errors
from evalsite.core.file_formats import load_cases
from evalsite.core.problems import SourceMap
from evalsite.core.schema_predicate import UnsupportedSchema, predicate
from evalsite.core.suite_schema import DEFS
from evalsite.core.yamlsafe import load_yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

RICH = {
    "suite": "rich", "version": 1, "description": "every block", "templating": "default",
    "defaults": {"temperature": 0.5, "max_tokens": 100, "timeout_s": 30, "system": "Be brief.",
                 "stop": ["END"], "reasoning_effort": "low", "thinking": {"budget_tokens": 0}},
    "limits": {"max_cost_usd": 2}, "models": ["fake/small", "fake/large@terse"], "repeats": 2,
    "judge": {"model": "fake/judge", "rubric": "r", "max_tokens": 50, "temperature": 0,
              "pairing": "all", "consistency": 2,
              "calibration": {"min_kappa": 0.4, "min_kappa_lower_bound": 0.1, "min_labels": 3,
                              "on_below_floor": "flag"}},
    "gate": {"min_win_rate_lower_bound": {"fake/large@terse": 0.5}, "max_flip_rate": 0.2,
             "max_regression_points": 3, "significance": 0.05, "min_score": 0.5,
             "min_pass_rate": {"fake/small": 0.1}, "require_headline_eligible": True},
    "report": {"mover_threshold": 0.1, "frontier_points": 5},
    "variants": {"terse": {"system": "Terse.", "prompt": "Q: {{q}}", "params": {"top_p": 0.9}}},
    "privacy": {"no_look": False}, "labelling": {"guidelines": "Prefer the right one."},
    "labels": [{"task": "t", "case": "c1", "baseline": "fake/small",
                "candidate": "fake/large@terse", "prefer": "tie", "probability": 0.5}],
    "scorecard": [{"criterion": "Checks_1", "weight": 1, "scorer": "checks"}],
    "tasks": [
        {"id": "t", "kind": "qa", "prompt": [{"role": "system", "content": "S"},
                                              {"role": "user", "content": [{"text": "{{q}}"},
                                                                           {"image": "pic"}]}],
         "schema": {"type": "object"}, "judge": True, "tags": ["a"], "timeout_s": 10,
         "checks": [{"contains": "x", "case_sensitive": False}, {"max_chars": 10},
                    {"json_path": {"path": "$.a", "equals": 1, "compare": "value"}},
                    {"python": "mod.sub:fn"}, {"json_valid": True}, {"one_of": ["a", "b"]},
                    {"regex": "^a", "read": "evalpin"}],
         "check": {"setup": "", "run": "true", "timeout_s": 5},
         "grade": {"rubric": "g", "threshold": 0.5},
         "weighted_match": {"label": "l", "threshold": 0.5,
                            "fields": {"a": {"weight": 1, "tolerance": 0}}},
         "variants": {"terse": {"prompt": "T {{q}}"}},
         "cases": [{"id": "c1", "vars": {"q": "hi", "n": 1, "f": None, "b": True},
                    "files": {"pic": "p.png"}, "tags": ["x"], "expected": [{"a": 1}],
                    "checks": [{"equals": "hi"}],
                    "grade": {"criteria": "c", "reference": "r", "threshold": 1}},
                   {"id": "c2", "vars": {"q": "yo"}}]},
        {"id": "s", "prompt": "{{q}}", "cases_from": {"command": ["make", "cases"]}},
        {"id": "u", "prompt": "x", "cases_path": "cases.csv", "schema_path": "s.json"},
    ],
}  # fmt: skip

ODD_VALUES = [
    0, 1, -1, 1.0, 0.5, 2.5, -0.5, 1e9, math.nan, math.inf, True, False, None, "", "x",
    "c1", "UPPER", "a b", "x\n", "fake/small", "fake/small@terse", "é", "mod:fn", [], [1],
    ["a"], {}, {"a": 1}, {"id": "c9"}, 21, 1_000_001, "baseline", "flag", "evalpin",
]  # fmt: skip


def _nodes(value, path=()):
    """Every (path, value) inside `value`, itself first."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _nodes(item, (*path, index))


def _at(document, path):
    for key in path:
        document = document[key]
    return document


def _mutated(document, rng: random.Random):
    """A copy of `document` with one node replaced, removed, renamed or added to."""
    changed = copy.deepcopy(document)
    path, value = rng.choice(list(_nodes(changed)))
    if not path:
        return rng.choice(ODD_VALUES)
    parent, key = _at(changed, path[:-1]), path[-1]
    move = rng.randrange(4)
    if move == 0:
        parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    elif move == 1:
        del parent[key]
    elif move == 2 and isinstance(value, dict):
        value[rng.choice(["extra", "id", "vars", "prompt", "cases", "schema", "pattern"])] = (
            copy.deepcopy(rng.choice(ODD_VALUES))
        )
    elif move == 2 and isinstance(value, list) and value:
        value.append(copy.deepcopy(rng.choice(value)))
    elif isinstance(parent, dict):
        parent[rng.choice(["extra", "id", "Id", "run", "rubric", "equals"])] = parent.pop(key)
    else:
        parent.insert(0, copy.deepcopy(rng.choice(ODD_VALUES)))
    return changed


def _documents():
    documents = [RICH]
    for path in sorted(EXAMPLES.glob("**/*.yaml")):
        if not path.name.endswith(".replies.yaml"):
            documents.append(load_yaml(path.read_bytes(), filename=str(path)).data)
    return documents


def _agrees(definition, instance) -> None:
    valid = not any(True for _ in schema_errors._validator(definition).iter_errors(instance))
    assert schema_errors._valid(definition)(instance) is valid, instance


def _keys(schema) -> set[str]:
    """Every property name the suite schema knows."""
    if isinstance(schema, dict):
        found = (
            set(schema.get("properties", {}))
            if isinstance(schema.get("properties"), dict)
            else set()
        )
        return found.union(*(_keys(value) for value in schema.values()))
    if isinstance(schema, list):
        return set().union(*(_keys(item) for item in schema))
    return set()


def test_the_check_agrees_with_jsonschema_for_any_value_in_any_place():
    for index, (path, _) in enumerate(list(_nodes(RICH))[1:]):
        for value in ODD_VALUES[index % 4 :: 4]:  # each value in a quarter of the places
            changed = copy.deepcopy(RICH)
            _at(changed, path[:-1])[path[-1]] = copy.deepcopy(value)
            _agrees(None, changed)


def test_the_check_agrees_with_jsonschema_for_any_key_taken_out_or_put_in():
    keys = sorted(_keys(schema_errors._schema(None))) + ["extra"]
    places = [(path, value) for path, value in _nodes(RICH) if isinstance(value, dict)]
    for index, (path, value) in enumerate(places):
        for key in [*value, *keys[index % 3 :: 3]]:  # each key put in a third of the places
            changed = copy.deepcopy(RICH)
            node = _at(changed, path)
            if key in node:
                del node[key]
            else:
                node[key] = copy.deepcopy(RICH["tasks"][0].get(key, "x"))
            _agrees(None, changed)


def test_the_check_agrees_with_jsonschema_on_the_examples_broken_at_random():
    rng = random.Random(31)
    for document in _documents():
        _agrees(None, document)
        for _ in range(100):
            _agrees(None, _mutated(document, rng))


@pytest.mark.parametrize("definition", ["cases", "case", "labels_file", "task", "check"])
def test_the_check_agrees_with_jsonschema_on_each_definition_a_file_is_checked_against(definition):
    rng = random.Random(definition)
    samples = {
        "cases": RICH["tasks"][0]["cases"],
        "case": RICH["tasks"][0]["cases"][0],
        "labels_file": {"labels": RICH["labels"]},
        "task": RICH["tasks"][0],
        "check": {"json_path": {"path": "$.a", "equals": None}},
    }
    _agrees(definition, samples[definition])
    for _ in range(600):
        _agrees(definition, _mutated(samples[definition], rng))


def test_keys_that_exclude_each_other_are_refused_together():
    both = copy.deepcopy(RICH)
    both["labels_path"] = "labels.yaml"
    _agrees(None, both)
    task = {**RICH["tasks"][0], "schema_path": "s.json", "cases_path": "c.csv"}
    for keys in [("schema_path",), ("cases_path",), ("schema_path", "cases_path")]:
        _agrees("task", {**RICH["tasks"][0], **{key: task[key] for key in keys}})


def test_ids_and_names_are_matched_as_re2_matches_them():
    """`$` before a last newline matches in Python's re, not in RE2; a text that is not
    ASCII goes to RE2 too."""
    for text in ["c1", "c1\n", "c1\nx", "é1", "-c", "c" * 64, "c" * 65]:
        _agrees("case", {"id": text})
        _agrees("case", {"id": "c", "vars": {text: 1}})


def test_a_value_json_does_not_have_is_left_to_jsonschema():
    check = schema_errors._valid("case")
    assert not check({"id": "c", "tags": ("a",)})  # a tuple: jsonschema says it is no list
    assert not check({"id": "c", "vars": {"n": 2**0.5j}})


def test_a_keyword_it_does_not_know_is_refused_when_compiled():
    for schema in ({"$ref": "#/x"}, {"patternProperties": {}}, {"format": "date"}):
        with pytest.raises(UnsupportedSchema):
            predicate(schema)
    assert set(DEFS) and all(predicate(schema_errors._schema(name)) for name in DEFS)


def test_a_valid_suite_is_never_walked_by_jsonschema_and_a_broken_one_is():
    rows = "".join(f"c{n:05},question {n}\n" for n in range(2000))
    cases, problems = load_cases(f"id,q\n{rows}".encode(), filename="cases.csv")
    assert not problems
    suite = {**RICH, "tasks": [{"id": "t", "prompt": "{{q}}", "cases": cases.data}]}
    walks = mock.patch.object(schema_errors, "_validator", wraps=schema_errors._validator)
    with walks as made:
        assert schema_errors.schema_problems(suite, SourceMap("s.yaml", {})) == []
        assert (
            schema_errors.schema_problems(cases.data, SourceMap("c.csv", {}), definition="cases")
            == []
        )
    assert made.call_count == 0
    broken = copy.deepcopy(suite)
    broken["tasks"][0]["cases"][1500]["id"] = "Not An Id"
    with walks as made:
        problems = schema_errors.schema_problems(broken, SourceMap("s.yaml", {}))
    assert made.call_count == 1
    assert [p.message for p in problems] == [schema_errors.DEFS["identifier"]["x-message"]]
