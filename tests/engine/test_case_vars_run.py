"""Case vars in check values and judge texts, end to end (issue 32, silent drop 3): a
scripted run of promptfoo's MMLU shape — `equals: '{{answer}}'` over cases whose `answer`
differs — gives each case its own verdict; a regex reads its var as literal text; and the
judge's rubric, a grade's rubric, criteria and reference reach the judge rendered."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from runs.models import Answer, Judgement
from tests.helpers.factories import write_scripted_suite

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = """\
suite: quiz-vars
version: 1
models: [scripted/right, scripted/wrong]
judge: {model: scripted/judge, rubric: "The right letter is {{answer}}."}
replies: replies.yaml
tasks:
  - id: quiz
    prompt: "{{question}} Reply with the letter only."
    checks: [{equals: "{{answer}}"}]
    cases:
      - {id: a, vars: {question: "1+1? A) 2 B) 3 C) 4", answer: A}}
      - {id: b, vars: {question: "2+2? A) 3 B) 4 C) 5", answer: B}}
      - {id: c, vars: {question: "3+3? A) 4 B) 5 C) 6", answer: C}}
  - id: price
    judge: false
    prompt: "Quote {{price}} as a price."
    checks: [{regex: "^\\\\${{price}}$"}]
    grade: {rubric: "States {{price}} exactly."}
    cases:
      - id: coffee
        vars: {price: "3.50"}
        grade: {criteria: "Writes ${{price}}.", reference: "${{price}}"}
"""
REPLIES = """\
right: {quiz/a: [A], quiz/b: [B], quiz/c: [C], price/coffee: [$3.50]}
wrong: {quiz/a: [A], quiz/b: [A], quiz/c: [A], price/coffee: [$3x50]}
judge:
  judge/quiz/a: ['{"reason": "same", "winner": "tie"}']
  judge/quiz/b: ['{"reason": "2", "winner": "1"}', '{"reason": "2", "winner": "2"}']
  judge/quiz/c: ['{"reason": "2", "winner": "1"}', '{"reason": "2", "winner": "2"}']
  grade/price/coffee: ['{"reasoning": "fine", "score": 5}']
"""


@pytest.fixture
def ran(tmp_path) -> None:
    path = write_scripted_suite(tmp_path, SUITE, REPLIES)
    with pytest.raises(SystemExit) as exited:
        call_command("run", str(path), "--json")
    assert exited.value.code == 0


def test_each_case_is_checked_against_its_own_answer_var(ran):
    verdicts = {
        (a.contestant.removeprefix("scripted/"), a.case_id): (a.checks_passed, a.checks["note"])
        for a in Answer.objects.filter(task_id="quiz")
    }
    assert verdicts == {
        ("right", "a"): (True, None),
        ("right", "b"): (True, None),
        ("right", "c"): (True, None),
        ("wrong", "a"): (True, None),
        ("wrong", "b"): (False, "expected exactly 'B', got 'A'"),
        ("wrong", "c"): (False, "expected exactly 'C', got 'A'"),
    }


def test_a_regex_reads_its_var_as_literal_text(ran):
    prices = {a.contestant: a.checks_passed for a in Answer.objects.filter(task_id="price")}
    assert prices == {"scripted/right": True, "scripted/wrong": False}
    wrong = Answer.objects.get(task_id="price", contestant="scripted/wrong")
    assert wrong.checks["note"] == "no match for the regex '^\\\\$3\\\\.50$'"


def test_the_judge_reads_the_rubric_rendered_for_each_case(ran):
    for case, letter in (("a", "A"), ("b", "B"), ("c", "C")):
        for call in Judgement.objects.filter(kind=Judgement.Kind.PAIR, case_id=case):
            user = call.request["messages"][1]["content"]
            assert f"<rubric>\nThe right letter is {letter}.\n</rubric>" in user
            assert "{{" not in user


def test_a_grade_reads_its_rubric_criteria_and_reference_rendered(ran):
    grades = Judgement.objects.filter(kind=Judgement.Kind.GRADE)
    assert grades.count() == 2
    for grade in grades:
        user = grade.request["messages"][1]["content"]
        assert "<rubric>\nStates 3.50 exactly.\n</rubric>" in user
        assert "<case_criteria>\nWrites $3.50.\n</case_criteria>" in user
        assert "<reference_answer>\n$3.50\n</reference_answer>" in user
