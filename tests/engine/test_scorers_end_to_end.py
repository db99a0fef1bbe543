"""The new scorers end to end (issue 16): a scripted run of a suite with a weighted_match
task, exact_match and json_valid checks and per-case grades stores on each Answer the
verdicts worked out by hand below, Answer.passed includes the match, the case's criteria and
reference reach the judge, a grade reply with no usable score stays an error, and the
estimate counts the per-case grade calls."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from evalsite.core.suites import load_suite
from runs.models import Answer, Judgement
from runs.planning.planner import RunOptions, make_plan
from tests.helpers.factories import run_command, write_scripted_suite

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = """\
suite: new-scorers
version: 1
models: [scripted/good, scripted/sloppy]
judge: {model: scripted/judge}
replies: replies.yaml
tasks:
  - id: usage
    judge: false
    prompt: "List the use cases of: {{conversation}}"
    weighted_match:
      label: use_case
      threshold: 0.8
      fields:
        use_case: {weight: 2}
        percent: {weight: 1, tolerance: 0.2}
        order: {weight: 1}
    cases:
      - id: two-uses
        vars: {conversation: "Summarise this, then translate it."}
        expected:
          - {use_case: Summarize content, percent: 0.7, order: 1}
          - {use_case: Translate content, percent: 0.3, order: 2}
  - id: classify
    judge: false
    prompt: "Label: {{conversation}}"
    cases:
      - id: lost-order
        vars: {conversation: "I cannot find my last order."}
        checks: [{exact_match: order_issue}]
      - id: as-json
        vars: {conversation: "Reply as JSON."}
        checks: [{json_valid: true}]
      - id: plan
        vars: {conversation: "What is in my plan?"}
        grade: {criteria: "Says billing.", reference: billing, threshold: 0.75}
      - id: kind
        vars: {conversation: "Thanks!"}
        grade: {criteria: "Is polite."}
      - id: broken
        vars: {conversation: "Hm."}
        grade: {criteria: "Anything."}
"""
REPLIES = """\
good:
  usage/two-uses: ['[{"use_case": "Summarize content", "percent": 0.8, "order": 1},
                     {"use_case": "Translate content", "percent": 0.2, "order": 2}]']
  classify/lost-order: ["  Order_Issue\\n"]
  classify/as-json: ['{"label": "billing"}']
  classify/plan: [billing]
  classify/kind: [You are welcome.]
  classify/broken: [Hm.]
sloppy:
  usage/two-uses: ["```json\\n[{\\"use_case\\": \\"summarize content\\", \\"percent\\": 0.9,
                    \\"order\\": 2}, {\\"use_case\\": \\"Other\\", \\"percent\\": 0.1,
                    \\"order\\": 1}]\\n```"]
  classify/lost-order: [order_issue.]
  classify/as-json: ["label: billing"]
  classify/plan: [no idea]
  classify/kind: [whatever]
  classify/broken: [Hm.]
judge:
  grade/classify/plan: ['{"reasoning": "acceptable", "score": 3}']
  grade/classify/kind: ['{"reasoning": "acceptable", "score": 3}']
  grade/classify/broken: [I would rather not say.]
"""


@pytest.fixture
def suite_path(tmp_path) -> Path:
    return write_scripted_suite(tmp_path, SUITE, REPLIES)


def _verdicts() -> dict:
    return {
        (a.contestant.removeprefix("scripted/"), a.case_id): (
            a.passed, a.checks_passed, a.checks["note"], a.match_score, a.match_passed,
            a.grade_score, a.grade_passed,
        )
        for a in Answer.objects.all()
    }  # fmt: skip


def test_a_scripted_run_stores_the_hand_counted_verdicts(suite_path):
    with pytest.raises(SystemExit) as exited:
        call_command("run", str(suite_path), "--json")
    assert exited.value.code == 0
    # good: every label, 0.8 and 0.2 within 0.2 of 0.7 and 0.3, both orders: 1.0.
    # sloppy (in a fenced block): labels P = R = 1/2, F1 1/2; percent 0.9 within 0.2 of 0.7:
    # 1/2; order 2 for 1: 0. Weights 2:1:1 → (2 * 0.5 + 0.5 + 0) / 4 = 0.375 < 0.8.
    # Grades: 3 → 0.5, failing the case's 0.75 and passing the default 0.5; an unusable reply
    # is no grade at all.
    exact_note = "expected 'order_issue' (any case), got 'order_issue.'"
    json_note = "the answer is not JSON: Expecting value: line 1 column 1 (char 0)"
    assert _verdicts() == {
        ("good", "two-uses"): (True, True, None, 1.0, True, None, None),
        ("sloppy", "two-uses"): (False, True, None, 0.375, False, None, None),
        ("good", "lost-order"): (True, True, None, None, None, None, None),
        ("sloppy", "lost-order"): (False, False, exact_note, None, None, None, None),
        ("good", "as-json"): (True, True, None, None, None, None, None),
        ("sloppy", "as-json"): (False, False, json_note, None, None, None, None),
        # a failed grade, or no usable grade, fails the attempt (issue 28 item 6)
        ("good", "plan"): (False, True, None, None, None, 3, False),
        ("sloppy", "plan"): (False, True, None, None, None, 3, False),
        ("good", "kind"): (True, True, None, None, None, 3, True),
        ("sloppy", "kind"): (True, True, None, None, None, 3, True),
        ("good", "broken"): (False, True, None, None, None, None, None),
        ("sloppy", "broken"): (False, True, None, None, None, None, None),
    }
    sloppy = Answer.objects.get(contestant="scripted/sloppy", case_id="two-uses")
    assert sloppy.match_detail == {
        "fields": {"use_case": 0.5, "percent": 0.5, "order": 0.0},
        "note": None,
    }
    broken = Judgement.objects.filter(kind=Judgement.Kind.GRADE, case_id="broken")
    assert {(g.parse_status, g.grade_score) for g in broken} == {
        (Judgement.Parse.UNPARSEABLE, None)
    }


def test_the_case_criteria_and_reference_reach_the_judge(suite_path):
    with pytest.raises(SystemExit):
        call_command("run", str(suite_path), "--json")
    grades = Judgement.objects.filter(kind=Judgement.Kind.GRADE)
    assert sorted(set(grades.values_list("case_id", flat=True))) == ["broken", "kind", "plan"]
    user = grades.filter(case_id="plan").first().request["messages"][1]["content"]
    assert "<case_criteria>\nSays billing.\n</case_criteria>" in user
    assert "<reference_answer>\nbilling\n</reference_answer>" in user
    kind = grades.filter(case_id="kind").first().request["messages"][1]["content"]
    assert "<case_criteria>\nIs polite.\n</case_criteria>" in kind
    assert "<reference_answer>" not in kind


def test_the_estimate_counts_one_grade_call_per_answer_of_a_graded_case(suite_path):
    plan = make_plan(None, load_suite(suite_path), RunOptions(dry_run=True))
    assert plan.estimate["judge"]["calls"] == 3 * 2  # three graded cases, two contestants
    assert plan.estimate["calls"] == 6 * 2 + 6


def test_report_failures_names_a_failed_match_and_a_missing_grade(suite_path):
    with pytest.raises(SystemExit):
        call_command("run", str(suite_path), "--json")
    code, out, _ = run_command("report", "latest", "--failures")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith("7 of 12 answers failed")  # with the 4 of a failed grade
    # a failed weighted match and a grade the judge never gave fail the attempt: both say why
    at = lines.index("  usage/two-uses #0  scripted/sloppy")
    assert lines[at + 1] == "    weighted match 0.375: below its threshold"
    at = lines.index("  classify/broken #0  scripted/good")
    assert lines[at + 1] == "    grade: the judge gave no usable grade"
