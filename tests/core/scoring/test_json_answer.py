"""Fenced blocks, JSON in answers, schema verdicts and json_path lookups."""

from __future__ import annotations

import pytest

from evalsite.core.scoring.fences import checked_text, fenced_blocks
from evalsite.core.scoring.json_answer import (
    MISSING,
    find_json,
    json_path_value,
    parse_json_answer,
    schema_verdict,
)

SCHEMA = {
    "type": "object",
    "required": ["category", "items"],
    "additionalProperties": False,
    "properties": {
        "category": {"enum": ["billing", "bug"]},
        "items": {"type": "array", "items": {"type": "object", "required": ["sku"]}},
    },
}


def test_fenced_blocks_are_found_in_order_with_their_language():
    text = "Intro\n```python\nprint(1)\n```\nthen\n~~~\necho hi\n~~~\n"
    assert [(b.language, b.code) for b in fenced_blocks(text)] == [
        ("python", "print(1)\n"),
        ("", "echo hi\n"),
    ]


def test_an_unclosed_fence_runs_to_the_end_of_the_answer():
    assert [b.code for b in fenced_blocks("```bash\nls\nwc -l")] == ["ls\nwc -l\n"]


def test_a_closing_fence_must_be_as_long_as_the_opening_one():
    text = "````md\n```\ninner\n```\n````"
    assert [b.code for b in fenced_blocks(text)] == ["```\ninner\n```\n"]


def test_an_indented_fence_loses_its_indentation_from_the_block():
    assert fenced_blocks("  ```\n  a\n    b\n  ```")[0].code == "a\n  b\n"


def test_inline_triple_backticks_are_not_a_fence():
    assert fenced_blocks("use ```x``` here") == []


def test_checked_text_is_the_trimmed_answer_or_the_inside_of_the_first_block():
    assert checked_text("  P1 \n") == "P1"
    assert checked_text("Here:\n```\n  P2  \n```\n```\nP3\n```") == "P2"


def test_schema_verdict_passes_json_that_fits():
    verdict = schema_verdict(' {"category": "bug", "items": [{"sku": "A"}]} \n', SCHEMA)
    assert (verdict.verdict, verdict.error) == ("pass", None)
    assert verdict.parsed == {"category": "bug", "items": [{"sku": "A"}]}


def test_schema_verdict_reads_the_first_fenced_block_when_the_whole_answer_is_not_json():
    answer = 'Sure:\n```json\n{"category": "billing", "items": []}\n```\n```json\n{}\n```'
    assert schema_verdict(answer, SCHEMA).verdict == "pass"


def test_prose_is_a_parse_fail_with_the_parser_message():
    verdict = schema_verdict("It is a billing problem.", SCHEMA)
    assert verdict.verdict == "parse_fail"
    assert verdict.parsed is None
    assert verdict.error.startswith("not JSON: Expecting value")


def test_nan_is_not_json():
    assert schema_verdict('{"category": NaN}', SCHEMA).verdict == "parse_fail"


def test_deep_nesting_is_a_parse_fail_not_a_crash():
    verdict = schema_verdict("[" * 100_000 + "]" * 100_000, SCHEMA)
    assert verdict.verdict == "parse_fail"


def test_schema_fail_names_the_json_path_of_the_error():
    answer = '{"category": "billing", "items": [{"sku": "A"}, {"name": "x"}]}'
    verdict = schema_verdict(answer, SCHEMA)
    assert verdict.verdict == "schema_fail"
    assert verdict.error == "$.items[1]: 'sku' is a required property"
    assert verdict.parsed["category"] == "billing"


def test_the_first_error_is_the_one_nearest_the_root():
    verdict = schema_verdict('{"category": "other", "items": [{}], "extra": 1}', SCHEMA)
    assert verdict.error == "$: Additional properties are not allowed ('extra' was unexpected)"


def test_a_long_schema_message_is_cut():
    verdict = schema_verdict('{"category": "' + "x" * 5000 + '", "items": []}', SCHEMA)
    assert verdict.verdict == "schema_fail"
    assert len(verdict.error) < 320


def test_no_schema_is_not_applicable_whatever_the_answer():
    assert schema_verdict("not json at all", None).verdict == "not_applicable"


def test_a_false_schema_fails_every_answer():
    assert schema_verdict("{}", False).verdict == "schema_fail"


def test_parse_json_answer_reports_the_fenced_blocks_error_when_there_is_one():
    parsed = parse_json_answer("Here:\n```json\n{'a': 1}\n```")
    assert not parsed.ok
    assert "property name enclosed in double quotes" in parsed.error


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$", {"a": {"b": [10, {"c d": True}]}}),
        ("$.a.b[0]", 10),
        ("$.a.b[1]['c d']", True),
        ('$["a"].b[1]["c d"]', True),
        ("$.a.b[2]", MISSING),
        ("$.a.x", MISSING),
        ("$.a.b.c", MISSING),
    ],
)
def test_json_path_steps(path, expected):
    assert json_path_value({"a": {"b": [10, {"c d": True}]}}, path) == expected


def test_json_path_outside_the_grammar_is_a_value_error():
    with pytest.raises(ValueError):
        json_path_value({}, "$..a")


def test_find_json_falls_back_to_the_first_object_in_prose():
    assert find_json('I think {"score": 4} fits. {"score": 2}') == {"score": 4}
    with pytest.raises(ValueError):
        find_json("no json here { at all")
