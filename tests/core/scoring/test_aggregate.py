"""answer_passed, pass^k / pass@k and per-tag rates, against counts worked out by hand."""

from __future__ import annotations

import pytest

from evalsite.core.scoring.aggregate import (
    answer_passed,
    answer_tags,
    contestant_rates,
    repeat_stats,
    tag_rates,
)


@pytest.mark.parametrize(
    ("schema", "checks", "execution", "expected"),
    [
        ("pass", True, None, True),
        ("not_applicable", True, "pass", True),
        ("parse_fail", True, None, False),
        ("schema_fail", True, None, False),
        ("pass", False, None, False),
        ("not_applicable", True, "fail", False),
        ("not_applicable", True, "error", False),
    ],
)
def test_an_answer_passes_only_when_every_part_passes(schema, checks, execution, expected):
    assert answer_passed(schema, checks, execution) is expected


def test_pass_hat_k_needs_every_repeat_and_pass_at_k_one():
    assert (repeat_stats([True, True, True]).pass_all, repeat_stats([True] * 3).pass_any) == (
        True,
        True,
    )
    mixed = repeat_stats([True, False, True])
    assert (mixed.k, mixed.passed, mixed.pass_all, mixed.pass_any) == (3, 2, False, True)
    none = repeat_stats([False, False])
    assert (none.pass_all, none.pass_any) == (False, False)


def test_repeat_stats_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        repeat_stats([])


def test_contestant_rates_match_hand_counts():
    outcomes = {
        (("triage", "a"), "m1"): [True, True, True],
        (("triage", "b"), "m1"): [True, False, True],
        (("triage", "c"), "m1"): [False, False, False],
        (("code", "d"), "m1"): [True, True, False],
        (("triage", "a"), "m2"): [True, True, True],
        (("triage", "b"), "m2"): [True, True, True],
    }
    rates = contestant_rates(outcomes)
    m1 = rates["m1"]
    # m1: pass^3 only case a (1/4); pass@3 cases a, b, d (3/4); answers 3+2+0+2 = 7 of 12
    assert (m1.cases, m1.pass_all, m1.pass_any, m1.answers, m1.answers_passed) == (4, 1, 3, 12, 7)
    assert (m1.pass_all_rate, m1.pass_any_rate) == (0.25, 0.75)
    m2 = rates["m2"]
    assert (m2.pass_all_rate, m2.pass_any_rate) == (1.0, 1.0)


def test_tag_rates_flag_tags_below_seventy_percent():
    answers = [
        (["billing"], True),
        (["billing", "edge_case"], False),
        (["billing"], True),
        (["billing", "edge_case"], True),
        (["security"], True),
        (["security", "security"], True),
        (["security"], True),
        (["security"], False),
        ([], True),
    ]
    rates = {rate.tag: rate for rate in tag_rates(answers)}
    assert list(rates) == ["billing", "edge_case", "security"]
    assert (rates["billing"].n, rates["billing"].passed, rates["billing"].rate) == (4, 3, 0.75)
    assert not rates["billing"].flagged
    assert (rates["edge_case"].rate, rates["edge_case"].flagged) == (0.5, True)
    assert (rates["security"].n, rates["security"].rate) == (4, 0.75)


def test_a_tag_exactly_at_seventy_percent_is_not_flagged():
    answers = [(["t"], True)] * 7 + [(["t"], False)] * 3
    (rate,) = tag_rates(answers)
    assert (rate.rate, rate.flagged) == (0.7, False)


def test_an_answers_tags_are_its_tasks_then_its_cases_once_each():
    assert answer_tags(("code", "help"), ("edge_case", "code")) == ("code", "help", "edge_case")
