"""Member-supplied patterns are matched by RE2, in time linear in the text (issue 25 item 4).

A pattern Python's `re` backtracks on exponentially (``^(a+)+$`` against ``aaaa…!``) held a
worker for seconds per character. The tests show RE2 is the engine by its syntax (``\\z``,
which Python's `re` does not read) and by answering the catastrophic input at a length
`re` would need hours for; validation refuses what RE2 cannot compile at its line.
"""

from __future__ import annotations

import textwrap

import pytest

from evalsite.core.json_schemas import task_schema_problems, unusable_reason
from evalsite.core.patterns import pattern_error
from evalsite.core.problems import SuiteError
from evalsite.core.scoring.checks import run_checks
from evalsite.core.scoring.json_answer import schema_verdict
from evalsite.core.suites import parse_suite

CATASTROPHIC = "^(a+)+$"
LONG_NEAR_MISS = "a" * 64 + "!"  # `re` takes about 2**64 steps to give up on this


def _suite(check: str = '{regex: "x"}', schema: str = "{type: string}") -> bytes:
    text = f"""\
        version: 1
        suite: patterns
        models: [fake/a]
        tasks:
          - id: t
            prompt: "Say {{{{word}}}}"
            schema: {schema}
            checks: [{check}]
            cases:
              - id: c
                vars: {{word: hi}}
        """
    return textwrap.dedent(text).encode()


def _problems(data: bytes) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        parse_suite(data, filename="s.yaml", origin="upload")
    return [f"{p.line} {p.path}: {p.message}" for p in caught.value.problems]


def test_a_regex_check_gives_up_on_a_catastrophic_pattern_at_once():
    result = run_checks(LONG_NEAR_MISS, [{"regex": CATASTROPHIC}])
    assert not result.passed
    assert result.note == "no match for the regex '^(a+)+$'"
    assert run_checks("a" * 64, [{"regex": CATASTROPHIC}]).passed


def test_a_regex_check_matches_with_re2_syntax():
    assert run_checks("line one\nline two", [{"regex": r"two\z"}]).passed
    assert not run_checks("line one\nline two", [{"regex": r"one\z"}]).passed


def test_a_case_insensitive_regex_check_still_folds_case():
    assert run_checks("Clock SKEW", [{"regex": "skew", "case_sensitive": False}]).passed
    assert not run_checks("Clock SKEW", [{"regex": "skew"}]).passed


def test_a_stored_regex_re2_cannot_compile_fails_its_check_with_the_reason():
    """A suite stored before validation refused such patterns still scores: the check fails."""
    result = run_checks("ab", [{"regex": "a(?=b)"}])
    assert not result.passed
    assert "cannot be used" in result.note and "look-around" in result.note


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("a(?=b)", "look-around"),
        ("(?<!a)b", "look-around"),
        (r"(a)\1", "back-references"),
        (r"(?P<x>a)(?P=x)", "back-references"),
        (r"end\Z", r"\z"),
    ],
)
def test_validation_refuses_a_regex_re2_cannot_compile_at_its_line(pattern, reason):
    quoted = pattern.replace("\\", "\\\\")
    problems = _problems(_suite(check=f'{{regex: "{quoted}"}}'))
    assert len(problems) == 1
    assert problems[0].startswith("8 tasks[0].checks[0].regex: invalid regular expression")
    assert reason in problems[0]


def test_pattern_error_is_none_for_what_re2_reads():
    for pattern in (
        "^P\\d$",
        "(?m)^#{1,3} ",
        r"\b30 ?(s|sec|seconds)\b",
        r"\A\(x\)",
        "[[:alpha:]]",
    ):
        assert pattern_error(pattern) is None, pattern


def test_a_schema_pattern_gives_up_on_a_catastrophic_input_at_once():
    verdict = schema_verdict(f'"{LONG_NEAR_MISS}"', {"type": "string", "pattern": CATASTROPHIC})
    assert verdict.verdict == "schema_fail"
    assert "does not match" in verdict.error


def test_schema_pattern_keywords_match_with_re2():
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": r"\d\z"}},
        "patternProperties": {r"^x_\w+\z": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert schema_verdict('{"code": "A1", "x_count": 3}', schema).verdict == "pass"
    failed = schema_verdict('{"code": "A1", "x_count": "3"}', schema)
    assert failed.verdict == "schema_fail" and "x_count" in failed.error
    assert schema_verdict('{"code": "A1", "y": 1}', schema).verdict == "schema_fail"


def test_a_schema_pattern_key_catastrophic_for_re_is_matched_at_once():
    schema = {"type": "object", "patternProperties": {CATASTROPHIC: {"type": "integer"}}}
    assert schema_verdict(f'{{"{LONG_NEAR_MISS}": "text"}}', schema).verdict == "pass"


def test_validation_refuses_a_schema_pattern_re2_cannot_compile_at_its_key():
    schema = "{type: object, properties: {code: {type: string, pattern: 'a(?=b)'}}}"
    problems = _problems(_suite(schema=schema))
    assert len(problems) == 1
    assert problems[0].startswith(
        "7 tasks[0].schema.properties.code.pattern: invalid regular expression"
    )
    assert "look-around" in problems[0]


def test_validation_refuses_a_pattern_properties_key_re2_cannot_compile():
    schema = {"type": "object", "patternProperties": {r"(a)\1": {"type": "integer"}}}
    [(path, message)] = task_schema_problems(schema)
    assert path == ("patternProperties", r"(a)\1")
    assert message.startswith("invalid regular expression") and "back-references" in message


def test_a_stored_schema_pattern_re2_cannot_compile_is_a_schema_fail():
    schema = {"type": "string", "pattern": "a(?=b)"}
    assert "look-around" in (unusable_reason(schema) or "")
    verdict = schema_verdict('"ab"', schema)
    assert verdict.verdict == "schema_fail"
    assert verdict.error.startswith("task schema error: invalid regular expression")


def test_a_property_named_pattern_is_not_taken_for_a_pattern():
    schema = {"type": "object", "properties": {"pattern": {"type": "string"}}}
    assert task_schema_problems(schema) == []
    assert schema_verdict('{"pattern": "(?=x)"}', schema).verdict == "pass"
