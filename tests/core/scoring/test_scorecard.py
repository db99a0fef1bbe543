"""Scorecards (evalsite/core/scoring/scorecard.py): per-answer weighted scores with the
weights renormalised over the criteria that apply, errors excluded, the per-contestant cell,
the suite's validation, and the scorecard gates. Every figure here is counted by hand."""

from __future__ import annotations

from typing import Any

import pytest

from evalsite.core.gates import check_gates
from evalsite.core.report.build import AnswerRow
from evalsite.core.scoring.scorecard import (
    Criterion,
    json_valid_of,
    score_answer,
    scorecard_report,
)
from evalsite.core.suites import Problem, SuiteError, parse_suite

CARD = (
    Criterion("accuracy", 3, "grade"),
    Criterion("format", 1, "schema"),
    Criterion("extraction", 2, "weighted_match"),
)


def row(**fields: Any) -> AnswerRow:
    base = {"task": "t", "case": "c", "contestant": "m", "repeat": 0, "status": "done"}
    return AnswerRow(**(base | fields))


# m's six answers:
#  1. schema pass, grade 4 (0.75, pass), match 0.5 (fail) -> (3*.75 + 1*1 + 2*.5) / 6 = 4.25/6
#  2. schema pass, grade 5 (1.0, pass), match 1.0 (pass) -> 6/6 = 1.0, passes
#  3. no schema, grade 3 (0.5, pass), no match           -> accuracy only: 0.5, passes
#  4. provider error                                      -> error
#  5. graded, the judge's reply had no usable score       -> error
#  6. schema parse_fail, not graded, no match             -> format only: 0.0
ANSWERS = (
    row(case="1", schema_verdict="pass", graded=True, grade_score=4, grade_passed=True,
        match_score=0.5, match_passed=False, passed=False),
    row(case="2", schema_verdict="pass", graded=True, grade_score=5, grade_passed=True,
        match_score=1.0, match_passed=True, passed=True),
    row(case="3", schema_verdict="not_applicable", graded=True, grade_score=3,
        grade_passed=True, passed=True),
    row(case="4", status="error", error_kind="rate_limited"),
    row(case="5", schema_verdict="not_applicable", graded=True, grade_score=None, passed=True),
    row(case="6", schema_verdict="parse_fail", passed=False),
    row(case="1", contestant="m@short", status="error", error_kind="timeout"),
)  # fmt: skip


def test_each_answer_is_weighted_over_the_criteria_that_apply_to_it():
    scores = [score_answer(CARD, answer) for answer in ANSWERS[:6]]

    assert scores[0].score == pytest.approx(4.25 / 6) and scores[0].passed is False
    assert scores[0].criteria["accuracy"].score == 0.75
    assert scores[1].score == 1.0 and scores[1].passed is True
    assert scores[2].score == 0.5 and scores[2].passed is True
    assert set(scores[2].criteria) == {"accuracy"}  # no schema, no match: left out
    assert scores[5].score == 0.0 and set(scores[5].criteria) == {"format"}


def test_a_provider_error_and_an_unusable_grade_are_errors_never_zeros():
    error, unusable = score_answer(CARD, ANSWERS[3]), score_answer(CARD, ANSWERS[4])
    assert (error.score, error.error) == (None, "rate_limited")
    assert (unusable.score, unusable.error) == (None, "grade_unusable")


def test_an_unusable_grade_is_no_error_for_a_scorecard_that_does_not_read_the_grade():
    card = (Criterion("format", 1, "schema"),)
    answer = row(schema_verdict="pass", graded=True, grade_score=None)
    assert score_answer(card, answer).score == 1.0


def test_an_answer_no_criterion_applies_to_is_not_scored_and_not_an_error():
    case = score_answer((Criterion("runs", 1, "exec"),), row(schema_verdict="pass"))
    assert (case.score, case.error) == (None, "")


def test_checks_exec_and_json_valid_read_their_verdicts():
    card = (Criterion("c", 1, "checks"), Criterion("e", 1, "exec"), Criterion("j", 2, "json_valid"))
    answer = row(has_checks=True, checks_passed=True, exec_verdict="error", json_valid=True)
    case = score_answer(card, answer)
    assert {name: s.score for name, s in case.criteria.items()} == {"c": 1.0, "e": 0.0, "j": 1.0}
    assert case.score == 0.75 and case.passed is False  # an errored execution is no pass


def test_the_cell_averages_the_scored_answers_and_counts_errors_apart():
    report = scorecard_report(CARD, ANSWERS, ["m", "m@short", "other"])

    assert report["criteria"] == [
        {"criterion": "accuracy", "weight": 3, "scorer": "grade"},
        {"criterion": "format", "weight": 1, "scorer": "schema"},
        {"criterion": "extraction", "weight": 2, "scorer": "weighted_match"},
    ]
    cell = report["cells"]["m"]
    assert cell["score"] == pytest.approx((4.25 / 6 + 1.0 + 0.5 + 0.0) / 4)
    assert (cell["passed"], cell["scored"], cell["errors"]) == (2, 4, 2)
    assert cell["criteria"]["accuracy"] == {"mean": 0.75, "pass_rate": 1.0, "n": 3}
    assert cell["criteria"]["format"] == pytest.approx({"mean": 2 / 3, "pass_rate": 2 / 3, "n": 3})
    assert cell["criteria"]["extraction"] == {"mean": 0.75, "pass_rate": 0.5, "n": 2}
    short = report["cells"]["m@short"]
    assert (short["score"], short["scored"], short["errors"]) == (None, 0, 1)
    assert short["criteria"]["accuracy"] == {"mean": None, "pass_rate": None, "n": 0}
    assert report["cells"]["other"]["scored"] == 0


def test_without_a_scorecard_the_score_is_the_share_that_passed_every_verdict():
    report = scorecard_report((), ANSWERS, ["m"])
    cell = report["cells"]["m"]
    assert report["criteria"] is None
    # 1 failed its match, 2 and 3 passed, 6 failed its schema; 4 and 5 are errors
    assert (cell["score"], cell["passed"], cell["scored"], cell["errors"]) == (0.5, 2, 4, 2)
    assert cell["criteria"] == {}


def test_json_valid_reads_the_schema_verdict_and_else_parses_the_text():
    assert json_valid_of("pass", "") is True
    assert json_valid_of("schema_fail", "") is True
    assert json_valid_of("parse_fail", '{"a": 1}') is False
    assert json_valid_of("not_applicable", 'Here:\n```json\n{"a": 1}\n```') is True
    assert json_valid_of("not_applicable", "{'a': 1}") is False


# --- the suite's scorecard: -----------------------------------------------------------------

SUITE = """\
suite: s
version: 1
judge: {model: fake/judge}
tasks:
  - id: graded
    prompt: "Q {{q}}"
    schema: {type: object}
    grade: {rubric: "be right"}
    cases: [{id: a, vars: {q: 1}}]
scorecard:
"""


def parse(scorecard: str):
    return parse_suite((SUITE + scorecard).encode(), filename="s.yaml")


def problems(scorecard: str) -> list[tuple[int | None, str, str]]:
    with pytest.raises(SuiteError) as caught:
        parse(scorecard)
    return [(p.line, p.path, p.message) for p in caught.value.problems]


def test_a_valid_scorecard_is_parsed_in_order():
    suite = parse(
        "  - {criterion: accuracy, weight: 3, scorer: grade}\n"
        "  - {criterion: format, weight: 0.5, scorer: schema}\n"
    )
    assert suite.scorecard == (
        Criterion("accuracy", 3, "grade"),
        Criterion("format", 0.5, "schema"),
    )


def test_an_unknown_scorer_and_a_weight_not_above_zero_are_errors_at_their_paths():
    found = problems(
        "  - {criterion: accuracy, weight: 0, scorer: grade}\n"
        "  - {criterion: style, weight: -1, scorer: llm-judge}\n"
    )
    paths = {path: message for _, path, message in found}
    assert paths["scorecard[0].weight"] == "a criterion's weight must be a number above 0"
    assert paths["scorecard[1].weight"] == "a criterion's weight must be a number above 0"
    assert paths["scorecard[1].scorer"].startswith("the scorer must be one of: schema, checks")


def test_a_duplicate_criterion_names_the_first_line():
    found = problems(
        "  - {criterion: accuracy, weight: 3, scorer: grade}\n"
        "  - {criterion: accuracy, weight: 1, scorer: schema}\n"
    )
    assert found == [
        (12, "scorecard[1].criterion", "duplicate criterion 'accuracy' (first at line 11)")
    ]


def test_a_scorer_the_suite_has_nothing_for_is_an_error_naming_what_is_missing():
    found = problems(
        "  - {criterion: runs, weight: 1, scorer: exec}\n"
        "  - {criterion: checked, weight: 1, scorer: checks}\n"
        "  - {criterion: extraction, weight: 1, scorer: weighted_match}\n"
        "  - {criterion: parses, weight: 1, scorer: json_valid}\n"
    )
    assert found == [
        (11, "scorecard[0].scorer", "the 'exec' scorer applies to no answer: no task or case "
                                    "has an execution check (check:)"),
        (12, "scorecard[1].scorer", "the 'checks' scorer applies to no answer: no task or case "
                                    "has checks:"),
        (13, "scorecard[2].scorer", "the 'weighted_match' scorer applies to no answer: no task "
                                    "has weighted_match:"),
    ]  # fmt: skip


def test_grade_without_a_graded_task_is_an_error():
    text = SUITE.replace('    grade: {rubric: "be right"}\n', "")
    with pytest.raises(SuiteError) as caught:
        parse_suite(
            (text + "  - {criterion: a, weight: 1, scorer: grade}\n").encode(), filename="s"
        )
    assert [p.message for p in caught.value.problems] == [
        "the 'grade' scorer applies to no answer: no task or case has grade:"
    ]
    assert isinstance(caught.value.problems[0], Problem)


# --- gates ----------------------------------------------------------------------------------


def _report(cells: dict[str, Any], criteria: Any = (("a", 1, "grade"),), run_id: str = "r2"):
    return {
        "run_id": run_id,
        "suite": {"name": "s"},
        "contestants": list(cells),
        "baseline": next(iter(cells)),
        "win_rates": {},
        "scorecard": {
            "criteria": [{"criterion": c, "weight": w, "scorer": s} for c, w, s in criteria]
            if criteria
            else None,
            "cells": {
                name: {"score": score, "passed": passed, "scored": scored, "errors": 0}
                for name, (score, passed, scored) in cells.items()
            },
        },
    }


def test_min_score_and_min_pass_rate_gate_every_contestant_the_baseline_included():
    report = _report({"m": (0.82, 12, 15), "m@v": (0.60, 9, 15), "n": (None, 0, 0)})
    results = check_gates(report, {"min_score": 0.7, "min_pass_rate": {"m": 0.8, "m@v": 0.5}})
    by = {(r.gate, r.subject): r for r in results}

    assert by["min_score", "m"].status == "passed"
    assert by["min_score", "m@v"].message == "m@v: scorecard score 0.600 < 0.700"
    assert by["min_score", "n"].status == "failed"  # nothing scored
    assert by["min_score", "n"].message == "n: no scorecard score to check (nothing measured)"
    assert by["min_pass_rate", "m"].message == "m: scorecard pass rate 0.800 >= 0.800"
    assert by["min_pass_rate", "m@v"].status == "passed"  # 0.6 >= 0.5
    assert ("min_pass_rate", "n") not in by  # not named in the map
    assert sum(r.failed for r in results) == 2


def test_the_regression_gate_compares_scorecard_scores_with_the_pinned_run():
    pinned = _report({"m": (0.90, 9, 10), "m@v": (0.50, 5, 10)}, run_id="r1")
    later = _report({"m": (0.80, 8, 10), "m@v": (0.52, 5, 10)})

    results = check_gates(later, {"max_regression_points": 5}, pinned)
    by = {r.subject: r for r in results if r.measure == "scorecard score"}

    assert by["m"].status == "failed" and by["m"].figure == 10.0
    assert by["m"].message == (
        "m: scorecard score 0.900 -> 0.800 against the pinned baseline r1, down 10.0 points "
        "(more than 5)"
    )
    assert by["m@v"].status == "passed" and "up 2.0 points (within 5)" in by["m@v"].message


def test_a_run_of_one_model_is_gated_on_its_score_though_it_has_no_win_rate_to_compare():
    pinned = _report({"m": (0.90, 9, 10)}, run_id="r1")
    results = check_gates(_report({"m": (0.70, 7, 10)}), {"max_regression_points": 5}, pinned)
    assert [(r.subject, r.measure, r.status) for r in results] == [
        ("run", "", "skipped"),
        ("m", "scorecard score", "failed"),  # 0.90 -> 0.70
        ("m", "pass rate", "failed"),  # 9/10 -> 7/10
    ]
    assert results[0].message.startswith("win-rates not compared with the pinned baseline r1")


def test_scores_under_another_scorecard_are_not_compared():
    pinned = _report({"m": (0.90, 9, 10)}, criteria=(("a", 2, "grade"),), run_id="r1")
    later = _report({"m": (0.10, 1, 10)})
    results = check_gates(later, {"max_regression_points": 5}, pinned)
    assert not any(r.failed for r in results)  # one model: no win-rates, and no scores either
    assert [r.status for r in results] == ["skipped", "skipped"]
    assert any("has another scorecard" in r.message for r in results)


def test_a_graded_case_is_enough_for_the_grade_scorer():
    text = SUITE.replace('    grade: {rubric: "be right"}\n', "").replace(
        "cases: [{id: a, vars: {q: 1}}]", "cases: [{id: a, vars: {q: 1}, grade: {criteria: ok}}]"
    )
    suite = parse_suite(
        (text + "  - {criterion: a, weight: 1, scorer: grade}\n").encode(), filename="s"
    )
    assert suite.scorecard == (Criterion("a", 1, "grade"),)


def test_a_score_gate_naming_an_undeclared_variant_is_an_error():
    text = (
        SUITE
        + "  - {criterion: a, weight: 1, scorer: grade}\ngate:\n  min_score: {fake/a@terse: 0.5}\n"
    )
    with pytest.raises(SuiteError) as caught:
        parse_suite(text.encode(), filename="s")
    assert [(p.path, p.message) for p in caught.value.problems] == [
        ('gate.min_score["fake/a@terse"]', "unknown variant 'terse'")
    ]


def test_rate_gates_apply_to_the_only_contestant_of_a_run_of_one():
    """A run of one model has no candidate: its check and pass^k gates gate the model itself
    (they passed vacuously before, gating no one)."""
    report = _report({"m": (0.5, 1, 2)})
    report["per_contestant"] = {
        "m": {"checks": {"rate": 0.5}, "pass_k": {"k": 2, "cases": 1, "pass_all": 0,
                                                   "pass_all_rate": 0.0}}
    }  # fmt: skip
    results = check_gates(report, {"min_check_pass_rate": 0.9, "min_pass_all_rate": 1})
    assert [(r.gate, r.subject, r.status) for r in results] == [
        ("min_check_pass_rate", "m", "failed"),
        ("min_pass_all_rate", "m", "failed"),
    ]
    assert results[1].message == "m: share of cases passing every attempt 0.000 < 1.000"


def test_min_pass_all_rate_gates_candidates_of_a_pairwise_run():
    report = _report({"base": (0.9, 9, 10), "cand": (0.9, 9, 10)})
    report["per_contestant"] = {
        name: {"pass_k": {"pass_all_rate": rate}} for name, rate in (("base", 0.2), ("cand", 0.8))
    }
    [result] = check_gates(report, {"min_pass_all_rate": 0.75})
    assert (result.subject, result.status) == ("cand", "passed")


def test_a_scorer_that_is_a_mapping_is_an_error_at_its_path_not_a_crash():
    """As an evaling scorecard writes it (`scorer: {type: llm-judge}`): a TypeError before."""
    found = problems("  - {criterion: accuracy, weight: 3, scorer: {type: llm-judge}}\n")
    paths = {path: message for _, path, message in found}
    assert "scorecard[0].scorer" in paths


def test_without_criteria_every_answer_scores_one_of_two_shared_values():
    """A report keeps each of its answers' scores while it is built: 100,000 of them share
    two values, not one each."""
    passed = [score_answer([], row(passed=True, case=f"c{n}")) for n in range(3)]
    failed = [score_answer([], row(passed=False, case=f"c{n}")) for n in range(3)]
    assert len({id(card) for card in passed}) == len({id(card) for card in failed}) == 1
    assert (passed[0].score, passed[0].passed, failed[0].score, failed[0].passed) == (
        1.0, True, 0.0, False,
    )  # fmt: skip
