"""Validation renders every check value and judge text that reads case vars, for every case
it is used for (docs/checks.md#case-vars-in-checks-and-rubrics): a placeholder naming a var
the case lacks is an error naming the task, the case, the text and the var, found before
anything is spent; a var only a check reads is a used var."""

from __future__ import annotations

from typing import Any

import pytest

from evalsite.core.problems import Problem
from evalsite.core.suites import SuiteError, parse_document, parse_suite

QUIZ = """\
suite: quiz
version: 1
tasks:
  - id: quiz
    judge: false
    prompt: "{{question}}"
    checks:
      - {equals: "{{answer}}"}
    cases:
      - id: one
        vars: {question: "1+1?", answer: "2"}
      - id: two
        vars: {question: "2+2?", anser: "4"}
"""


def parse(text: str, **options: Any):
    return parse_suite(text.encode(), filename="s.yaml", **options)


def errors(text: str, **options: Any) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        parse(text, **options)
    return [_shown(problem) for problem in caught.value.problems]


def _shown(problem: Problem) -> str:
    return f"{problem.line}: {problem.path}: {problem.message}"


def test_a_check_placeholder_the_case_has_no_var_for_names_task_case_check_and_var():
    assert errors(QUIZ) == [
        "12: tasks[0].cases[1]: case 'two' of task 'quiz' has no var for {{answer}} "
        "(used in tasks[0].checks[0].equals) - the case has var 'anser'"
    ]


def test_a_cases_own_check_is_reported_at_its_line():
    text = QUIZ.replace('anser: "4"}', 'answer: "4"}\n        checks: [{contains: "{{unit}}"}]')
    assert errors(text) == [
        "14: tasks[0].cases[1].checks[0].contains: case 'two' of task 'quiz' has no var for "
        "{{unit}} (used in tasks[0].cases[1].checks[0].contains)"
    ]


def test_a_var_only_a_check_reads_is_no_unused_var():
    suite = parse(QUIZ.replace("anser", "answer"))
    assert [w.message for w in suite.warnings] == []
    unused = parse(QUIZ.replace("anser", "answer").replace("{{answer}}", "2"))
    assert ["var 'answer' is used by no placeholder" in w.message for w in unused.warnings] == [
        True
    ]


def test_a_malformed_token_in_a_check_value_is_one_error_at_the_value():
    text = QUIZ.replace("anser", "answer").replace("{{answer}}", "{{ answer | upper }}")
    [error] = errors(text)
    assert error.startswith(
        "8: tasks[0].checks[0].equals: {{ answer | upper }} is not a placeholder"
    )


def test_a_regex_that_rendered_for_a_case_re2_cannot_compile_is_an_error_at_the_case():
    text = QUIZ.replace("anser", "answer").replace(
        'equals: "{{answer}}"', 'regex: "(?={{answer}})"'
    )
    found = errors(text)
    assert len(found) == 2 and all(
        "a regex RE2 cannot use: invalid regular expression" in e for e in found
    )
    assert found[0].startswith(
        "10: tasks[0].cases[0]: case 'one' of task 'quiz' gives tasks[0].checks[0].regex"
    )


def test_a_jinja2_suite_names_the_undefined_var_and_its_line():
    text = "templating: jinja2\n" + QUIZ.replace("{{answer}}", "{{ answer | trim }}")
    assert errors(text) == [
        "13: tasks[0].cases[1]: case 'two' of task 'quiz' fails to render "
        "tasks[0].checks[0].equals: template line 1: 'answer' is undefined - the case has var "
        "'anser'"
    ]


JUDGED = """\
suite: judged
version: 1
judge:
  model: openai/gpt-4.1
  rubric: Prefer the answer that helps {{customer}}.
tasks:
  - id: reply
    prompt: "Reply to {{customer}}: {{message}}"
    rubric: Mention order {{order}}.
    cases:
      - id: ada
        vars: {customer: Ada, message: Hi, order: "42"}
      - id: bob
        vars: {customer: Bob, message: Hi}
  - id: graded
    judge: false
    prompt: "Summarise {{doc}}"
    grade: {rubric: "Faithful to {{doc}}."}
    cases:
      - id: one
        vars: {doc: a}
        grade: {criteria: "Names {{author}}.", reference: "{{doc}} by {{author}}"}
"""


def test_rubrics_criteria_and_references_need_the_vars_they_name():
    assert errors(JUDGED) == [
        "13: tasks[0].cases[1]: case 'bob' of task 'reply' has no var for {{order}} "
        "(used in tasks[0].rubric)",
        "22: tasks[1].cases[0].grade.criteria: case 'one' of task 'graded' has no var for "
        "{{author}} (used in tasks[1].cases[0].grade.criteria)",
        "22: tasks[1].cases[0].grade.reference: case 'one' of task 'graded' has no var for "
        "{{author}} (used in tasks[1].cases[0].grade.reference)",
    ]


def test_the_judges_rubric_is_read_only_for_the_cases_whose_judge_calls_send_it():
    # the graded task is not judged in pairs and its grade has its own rubric
    text = JUDGED.replace("Mention order {{order}}.", "Short.")
    text = text.replace("Names {{author}}.", "Names her.").replace("{{doc}} by {{author}}", "x")
    text = text.replace("Prefer the answer that helps {{customer}}.", '"{{doc}}"')
    assert errors(text) == [
        "11: tasks[0].cases[0]: case 'ada' of task 'reply' has no var for {{doc}} "
        "(used in judge.rubric)",
        "13: tasks[0].cases[1]: case 'bob' of task 'reply' has no var for {{doc}} "
        "(used in judge.rubric)",
    ]


def test_a_stored_version_is_not_refused_over_a_check_value_it_kept_as_written():
    document = {
        "suite": "old", "version": 1,
        "tasks": [{"id": "t", "judge": False, "prompt": "hi",
                   "checks": [{"contains": "{{ not a var }}"}, {"equals": "{{x}}"}],
                   "cases": [{"id": "c"}]}],
    }  # fmt: skip
    suite = parse_document(document, filename="old.yaml", stored=True)
    assert suite.tasks[0].checks[0] == {"contains": "{{ not a var }}"}
    with pytest.raises(SuiteError):
        parse_document(document, filename="old.yaml")


def test_a_jinja2_check_value_has_the_prompts_sandbox_and_bounds():
    looping = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    text = "templating: jinja2\n" + QUIZ.replace("anser", "answer").replace(
        "{{answer}}", looping + "{{ answer }}"
    )
    [stopped] = errors(text)  # the first case only: the text is not run again
    assert stopped.startswith("11: tasks[0].cases[0]: case 'one' of task 'quiz' fails to render")
    assert stopped.endswith(
        "the template's rendering exceeds 1,000,000 steps (a loop that runs too long?)"
    )
    sneaky = "templating: jinja2\n" + QUIZ.replace("anser", "answer").replace(
        "{{answer}}", "{{ answer.__class__ }}"
    )
    assert all("refused by the sandbox" in error for error in errors(sneaky))
