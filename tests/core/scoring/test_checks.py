"""Deterministic checks: every kind passing and failing, options, unwrapping, notes."""

from __future__ import annotations

import pathlib
import sys

import pytest

from evalsite.core.scoring.checks import PYTHON_NOT_ALLOWED, run_checks


def one(answer: str, check: dict, **options) -> tuple[bool, str | None]:
    result = run_checks(answer, [check], **options)
    assert len(result.results) == 1
    return result.passed, result.note


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        ({"equals": "P1"}, "P1"),
        ({"contains": "refund"}, "We will refund you."),
        ({"not_contains": "as an AI"}, "Happy to help."),
        ({"one_of": ["low", "high"]}, "high"),
        ({"regex": r"\d{4}-\d{2}"}, "due 2026-12"),
        ({"max_chars": 5}, "héllo"),
        ({"min_chars": 5}, "héllo"),
        ({"json_path": {"path": "$.a[0].b", "equals": "x"}}, '{"a": [{"b": "x"}]}'),
    ],
)
def test_each_kind_passes(check, answer):
    assert one(answer, check) == (True, None)


@pytest.mark.parametrize(
    ("check", "answer", "note"),
    [
        ({"equals": "P1"}, "Priority: P1", "expected exactly 'P1', got 'Priority: P1'"),
        ({"contains": "refund"}, "No money back.", "does not contain 'refund'"),
        ({"not_contains": "JIRA"}, "See JIRA-1", "contains 'JIRA', which it must not"),
        ({"one_of": ["low", "high"]}, "medium", "'medium' is not one of 'low', 'high'"),
        ({"regex": r"^\d{4}$"}, "12345", r"no match for the regex '^\\d{4}$'"),
        ({"max_chars": 4}, "héllo", "5 characters, more than the maximum of 4"),
        ({"min_chars": 6}, "héllo", "5 characters, fewer than the minimum of 6"),
        (
            {"json_path": {"path": "$.a", "equals": "x"}},
            '{"a": "y"}',
            "$.a is 'y', expected 'x'",
        ),
    ],
)
def test_each_kind_fails_with_a_note(check, answer, note):
    assert one(answer, check) == (False, note)


def test_regex_searches_rather_than_matching_the_whole_text():
    assert one("the total is 30 seconds", {"regex": r"\b30 ?(s|sec|seconds)\b"})[0]


def test_chars_count_code_points_not_bytes():
    assert one("日本語", {"max_chars": 3})[0]
    assert not one("日本語", {"min_chars": 4})[0]


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        ({"equals": "p1"}, "P1"),
        ({"contains": "JIRA"}, "see jira"),
        ({"one_of": ["LOW"]}, "low"),
        ({"regex": "SKEW"}, "clock skew"),
    ],
)
def test_text_checks_are_case_sensitive_unless_told_otherwise(check, answer):
    assert not one(answer, check)[0]
    assert one(answer, {**check, "case_sensitive": False})[0]


def test_not_contains_ignoring_case_catches_every_casing():
    assert not one("Filed as Jira INC-1", {"not_contains": "jira", "case_sensitive": False})[0]
    assert one("Filed as Jira INC-1", {"not_contains": "jira"})[0]


def test_the_answer_is_trimmed_first():
    assert one("\n  P2 \n", {"equals": "P2"})[0]
    assert one("  abc  ", {"max_chars": 3})[0]


def test_text_checks_read_the_inside_of_the_first_fenced_block():
    answer = "Here you go:\n```\nP3\n```\n```\nP4\n```"
    assert one(answer, {"equals": "P3"})[0]
    assert not one(answer, {"contains": "Here"})[0]
    assert not one(answer, {"contains": "P4"})[0]


def test_length_checks_measure_the_whole_trimmed_answer_even_with_a_block():
    answer = "A long preamble that goes on.\n```\nP3\n```"
    assert not one(answer, {"max_chars": 10})[0]


def test_json_path_parses_like_the_schema_verdict():
    answer = 'Result:\n```json\n{"category": "billing", "n": 96.0}\n```'
    assert one(answer, {"json_path": {"path": "$.category", "equals": "billing"}})[0]
    assert one(answer, {"json_path": {"path": "$.n", "equals": 96}})[0]


def test_json_path_never_takes_true_for_one():
    assert not one('{"a": 1}', {"json_path": {"path": "$.a", "equals": True}})[0]
    assert not one('{"a": true}', {"json_path": {"path": "$.a", "equals": 1}})[0]
    assert one('{"a": null}', {"json_path": {"path": "$.a", "equals": None}})[0]


def test_json_path_notes_a_missing_key_and_a_non_json_answer():
    assert one('{"a": 1}', {"json_path": {"path": "$.b", "equals": 1}}) == (
        False,
        "$.b: not found in the answer",
    )
    passed, note = one("billing", {"json_path": {"path": "$.a", "equals": 1}})
    assert not passed
    assert note.startswith("$.a: the answer is not JSON")


def test_all_checks_run_and_the_first_failing_note_is_the_answers():
    result = run_checks(
        "P3",
        [{"one_of": ["P1", "P2", "P3"]}, {"equals": "P1"}, {"min_chars": 10}, {"contains": "P"}],
    )
    assert not result.passed
    assert [r.passed for r in result.results] == [True, False, False, True]
    assert result.note == "expected exactly 'P1', got 'P3'"
    assert [r.kind for r in result.results] == ["one_of", "equals", "min_chars", "contains"]


def test_no_checks_pass():
    result = run_checks("anything", [])
    assert (result.passed, result.results, result.note) == (True, (), None)


def test_a_malformed_check_fails_instead_of_crashing():
    assert not one("x", {"regex": "("})[0]
    assert not run_checks("x", [{"contains": "x", "equals": "x"}]).passed


def test_results_serialise_to_plain_dicts():
    result = run_checks("x", [{"equals": "y"}])
    assert result.to_dict() == {
        "passed": False,
        "results": [{"kind": "equals", "passed": False, "note": "expected exactly 'y', got 'x'"}],
        "note": "expected exactly 'y', got 'x'",
    }


# --- python checks -------------------------------------------------------------------


@pytest.fixture
def scoring_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    """A module evalsite_scoring_probe next to a (pretend) suite, forgotten afterwards."""
    (tmp_path / "evalsite_scoring_probe.py").write_text(
        "def starts_with_name(answer, case_vars):\n"
        "    return answer.startswith(case_vars['name'])\n"
        "def with_note(answer, case_vars):\n"
        "    return (False, f'{len(answer)} is too short')\n"
        "def boom(answer, case_vars):\n"
        "    raise RuntimeError('broken scorer')\n"
        "def exits(answer, case_vars):\n"
        "    raise SystemExit(3)\n"
        "def wrong_type(answer, case_vars):\n"
        "    return 'yes'\n"
    )
    yield tmp_path
    sys.modules.pop("evalsite_scoring_probe", None)


def python(answer: str, function: str, folder: pathlib.Path, **options) -> tuple[bool, str]:
    check = {"python": f"evalsite_scoring_probe:{function}"}
    return one(answer, check, allow_python=True, python_path=[str(folder)], **options)


def test_a_python_check_gets_the_trimmed_answer_and_the_case_vars(scoring_dir):
    vars_ = {"case_vars": {"name": "Priya"}}
    assert python("  Priya, hello", "starts_with_name", scoring_dir, **vars_) == (True, None)
    assert not python("Hello Priya", "starts_with_name", scoring_dir, **vars_)[0]


def test_a_python_check_may_return_its_own_note(scoring_dir):
    assert python("abc", "with_note", scoring_dir) == (False, "3 is too short")


@pytest.mark.parametrize(
    ("function", "note"),
    [
        ("boom", "python check evalsite_scoring_probe:boom raised RuntimeError: broken scorer"),
        ("exits", "python check evalsite_scoring_probe:exits raised SystemExit: 3"),
        ("missing", "cannot load it: LookupError: module 'evalsite_scoring_probe' has no"),
        ("wrong_type", "returned 'yes'; it must return a bool or a (bool, note) pair"),
    ],
)
def test_a_broken_python_check_is_a_failed_check_with_a_note(scoring_dir, function, note):
    passed, got = python("x", function, scoring_dir)
    assert not passed
    assert note in got


def test_a_python_check_whose_module_does_not_import_fails_with_a_note():
    passed, note = one("x", {"python": "no_such_module_here:check"}, allow_python=True)
    assert not passed
    assert "cannot load it: ModuleNotFoundError: No module named 'no_such_module_here'" in note


def test_python_checks_are_refused_unless_the_call_site_allows_them(scoring_dir):
    check = {"python": "evalsite_scoring_probe:starts_with_name"}
    assert one("x", check) == (False, PYTHON_NOT_ALLOWED)
    assert "evalsite_scoring_probe" not in sys.modules
    assert PYTHON_NOT_ALLOWED == (
        "python checks are only allowed for suites loaded from the filesystem"
    )


def test_the_python_path_does_not_stay_on_sys_path(scoring_dir):
    python("x", "with_note", scoring_dir)
    assert str(scoring_dir) not in sys.path
