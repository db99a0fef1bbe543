"""The value and key checks of a suite look at its strings without their paths first, and
walk with paths only when something is found: the same problems, in the same order, and
no path built for a clean suite (no database)."""

from __future__ import annotations

import datetime as dt
import math
from unittest import mock

import pytest

from evalsite.core import input_limits, suites
from evalsite.core.input_limits import value_problems
from evalsite.core.keys import any_looks_like_key, looks_like_key
from evalsite.core.problems import SourceMap, strings_in, walk_strings

KEY = "sk-" + "a1" * 10
CLEAN = {"suite": "s", "tasks": [{"id": "t", "cases": [{"id": f"c{n}", "vars": {"q": n}}
                                                        for n in range(2000)]}]}  # fmt: skip


@pytest.mark.parametrize(
    "texts",
    [
        [], ["plain"], [KEY], ["x" + KEY], ["x", KEY], ["sk-", "a1" * 10], ["say " + KEY],
        ["AIza" + "b" * 20], ["AIza" + "b" * 19, "b"], ["-", KEY[3:]], ["task-list-" + "a" * 20],
    ],
)  # fmt: skip
def test_any_looks_like_key_is_any_text_looking_like_one(texts):
    assert any_looks_like_key(texts) is any(looks_like_key(text) for text in texts)


def test_strings_in_are_the_strings_walk_strings_yields():
    data = {"a": ["x", ("y", {"z": "w", 1: "v"})], "b": {"c": None, "d": 2.5}}
    assert sorted(strings_in(data)) == sorted(text for _, text in walk_strings(data))


@pytest.mark.parametrize(
    "bad",
    [
        "nul\x00", "lone \ud800", math.nan, math.inf, dt.date(2026, 1, 1), {1: "int key"},
        {"k\x00": 1}, {(1, 2): "tuple key"}, ("a", "tuple"),
    ],
)  # fmt: skip
def test_a_value_with_a_problem_is_found_and_worded_as_by_the_walk(bad):
    data = {"tasks": [{"id": "t", "cases": [{"id": "c", "vars": {"q": "fine"}}, {"x": bad}]}]}
    with mock.patch.object(input_limits, "_plain_values", return_value=False):
        walked = value_problems(data, SourceMap("s.yaml", {}))
    assert value_problems(data, SourceMap("s.yaml", {})) == walked


def test_a_clean_suite_is_checked_without_a_path_for_each_value_or_string():
    sources = SourceMap("s.yaml", {})
    values = mock.patch.object(input_limits, "_value_problem", wraps=input_limits._value_problem)
    keys = mock.patch.object(suites, "walk_strings", wraps=walk_strings)
    with values as valued, keys as walked:
        assert value_problems(CLEAN, sources) == []
        assert suites._key_problems(CLEAN, sources) == []
    assert valued.call_count == 0 and walked.call_count == 0
    with_key = {**CLEAN, "description": f"use {KEY}"}
    (found,) = suites._key_problems(with_key, sources)
    assert found.path == "description"
