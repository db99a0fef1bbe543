"""Single-answer grades: the judge prompt and parsing its reply."""

from __future__ import annotations

import pytest

from evalsite.core.scoring.grading import GradeUnusable, grade_messages, parse_grade


def test_grade_messages_hold_the_task_rubric_and_answer_and_ask_for_reasoning_first():
    messages = grade_messages("Write a haiku.", "Old pond / frog", "Five-seven-five.")
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    assert system.index('"reasoning"') < system.index('"score"')
    assert "1 to 5" in system
    assert "<task>\nWrite a haiku.\n</task>" in user
    assert "<rubric>\nFive-seven-five.\n</rubric>" in user
    assert "<answer>\nOld pond / frog\n</answer>" in user


@pytest.mark.parametrize(
    ("score", "normalised"), [(1, 0.0), (2, 0.25), (3, 0.5), (4, 0.75), (5, 1.0)]
)
def test_scores_normalise_to_zero_to_one(score, normalised):
    grade = parse_grade(f'{{"reasoning": "ok", "score": {score}}}', threshold=0.5)
    assert (grade.score, grade.normalised) == (score, normalised)
    assert grade.passed is (normalised >= 0.5)
    assert grade.reasoning == "ok"


def test_the_threshold_is_inclusive():
    assert parse_grade('{"score": 4}', threshold=0.75).passed
    assert not parse_grade('{"score": 3}', threshold=0.75).passed


def test_a_reply_is_read_leniently():
    fenced = 'My grade:\n```json\n{"reasoning": "fine", "score": 4.0}\n```'
    assert parse_grade(fenced).score == 4
    prose = 'Reasoning first. {"reasoning": "solid", "score": 5} Thanks!'
    assert parse_grade(prose).score == 5


@pytest.mark.parametrize(
    "reply",
    [
        "I would give it a four.",
        '{"reasoning": "no score"}',
        '{"reasoning": "x", "score": 0}',
        '{"reasoning": "x", "score": 6}',
        '{"reasoning": "x", "score": 3.5}',
        '{"reasoning": "x", "score": "4"}',
        '{"reasoning": "x", "score": true}',
        '{"reasoning": "x", "score": null}',
        "[4]",
        "",
    ],
)
def test_an_unusable_reply_raises_instead_of_scoring_zero(reply):
    with pytest.raises(GradeUnusable):
        parse_grade(reply)
