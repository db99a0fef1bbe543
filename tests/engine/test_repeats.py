"""Issue 4's done-when: a suite with every check kind, an execution-checked code task, a graded
task and `repeats: 3`, run with the scripted provider, gives exactly the verdicts its replies
were written for, and pass^3 / pass@3 match a hand count."""

from __future__ import annotations

import json
import textwrap

import pytest

from evalsite.core.suites import load_suite
from runs.engine.runner import execute
from runs.models import Answer, Judgement, PriceTable, Run, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan

SUITE = """\
suite: every-check
version: 1
models: [scripted/a, scripted/b]
repeats: 3
judge: {model: scripted/judge}
tasks:
  - id: label
    prompt: "Priority of {{ticket}}?"
    judge: false
    checks:
      - {one_of: [P1, P2, P3]}
      - {equals: p1, case_sensitive: false}
      - {regex: "^P\\\\d$"}
    cases: [{id: outage, vars: {ticket: "site down"}}]
  - id: reply
    prompt: "Reply to {{name}}"
    judge: false
    checks:
      - {contains: Ada}
      - {not_contains: "as an ai", case_sensitive: false}
      - {min_chars: 10}
      - {max_chars: 40}
      - {python: "scorer:polite"}
    cases: [{id: ada, vars: {name: Ada}}]
  - id: extract
    prompt: "JSON for {{sku}}"
    judge: false
    schema: {type: object, required: [sku], properties: {sku: {type: string}}}
    checks: [{json_path: {path: $.sku, equals: A-1}}]
    cases: [{id: one, vars: {sku: A-1}}]
  - id: add
    prompt: "Write add(a, b) for {{lang}}"
    judge: false
    check:
      setup: "printf 'from impl import add\\\\nassert add(2, 3) == 5\\\\n' > t.py"
      run: 'cp "$ANSWER" impl.py && python3 t.py'
    cases: [{id: py, vars: {lang: Python}}]
  - id: essay
    prompt: "Explain {{topic}}"
    judge: false
    grade: {rubric: "Clear and correct.", threshold: 0.75}
    cases: [{id: dns, vars: {topic: DNS}}]
"""
GOOD_ADD = "```python\ndef add(a, b):\n    return a + b\n```"
BAD_ADD = "```python\ndef add(a, b):\n    return a - b\n```"
# Per model, per task: the three repeats' replies, and whether each was written to pass.
REPLIES = {
    "a": {
        "label/outage": (["P1", "P1", "P4"], [True, True, False]),  # P4: not one_of
        "reply/ada": (["Hello Ada, thanks!", "Hi there, friend", "Hello Ada, please!"],
                      [True, False, True]),  # no "Ada"; the scorer wants thanks/please
        "extract/one": (['{"sku": "A-1"}', '{"sku": "A-1"}', '{"sku": "A-1"}'], [True] * 3),
        "add/py": ([GOOD_ADD, GOOD_ADD, GOOD_ADD], [True] * 3),
        "essay/dns": (["DNS maps names."] * 3, [True, True, False]),  # graded 5, 4, 2
    },
    "b": {
        "label/outage": (["p1", "P2", "P1"], [False, False, True]),  # "p1" fails regex
        "reply/ada": (["As an AI, hello Ada", "Hello Ada, thanks", "Hello Ada, thanks a lot!"],
                      [False, True, True]),
        "extract/one": (['{"sku": "B-2"}', "not json", '{"sku": "A-1"}'], [False, False, True]),
        "add/py": ([BAD_ADD, BAD_ADD, BAD_ADD], [False] * 3),
        "essay/dns": (["DNS is magic."] * 3, [True, True, False]),  # graded 5, 4, 2
    },
}  # fmt: skip
# The scripted judge's grades are numbered by repeat (both contestants' answers of a repeat
# get the same item): 5 and 4 pass the 0.75 threshold, 2 does not.
GRADES = [5, 4, 2]
SCORER = """\
def polite(answer, case_vars):
    if "thanks" in answer or "please" in answer:
        return True
    return False, "neither thanks nor please"
"""


def _replies_yaml() -> str:
    lines = []
    for model, tasks in REPLIES.items():
        lines.append(f"{model}:")
        for key, (replies, _) in tasks.items():
            lines.append(f"  {key}: {json.dumps(replies)}")
    grades = [json.dumps({"reasoning": "r", "score": score}) for score in GRADES]
    lines += ["judge:", f"  grade/essay/dns: {json.dumps(grades)}"]
    return "\n".join(lines) + "\n"


@pytest.fixture
def suite_dir(tmp_path):
    (tmp_path / "scorer.py").write_text(SCORER)
    (tmp_path / "every-check.yaml").write_text(SUITE)
    return tmp_path


@pytest.mark.django_db(transaction=True)
def test_every_check_kind_with_three_repeats_gives_the_written_verdicts_and_pass_k(suite_dir):
    PriceTable.objects.ensure_default()
    replies = suite_dir / "replies.yaml"
    replies.write_text(_replies_yaml())
    path = suite_dir / "every-check.yaml"
    loaded = load_suite(path)
    version, _ = SuiteVersion.objects.register_file(path, loaded)
    run = store_plan(make_plan(version, loaded, RunOptions(replies=str(replies))))
    run = execute(run.id)

    assert run.status == Run.Status.DONE, run.detail
    assert Answer.objects.filter(run=run).count() == 2 * 5 * 3
    for model, tasks in REPLIES.items():
        for key, (_, expected) in tasks.items():
            task, case = key.split("/")
            got = [
                _passed(a)
                for a in Answer.objects.filter(
                    run=run, contestant=f"scripted/{model}", task_id=task, case_id=case
                ).order_by("repeat")
            ]
            assert got == expected, (model, key)

    # pass^3: every repeat passed; pass@3: at least one did (per case, over 5 cases)
    for model, tasks in REPLIES.items():
        hand_all = sum(all(expected) for _, expected in tasks.values())
        hand_any = sum(any(expected) for _, expected in tasks.values())
        pass_k = run.report["per_contestant"][f"scripted/{model}"]["pass_k"]
        assert (pass_k["k"], pass_k["cases"]) == (3, 5)
        assert (pass_k["pass_all"], pass_k["pass_any"]) == (hand_all, hand_any), model
        assert pass_k["pass_all_rate"] == pytest.approx(hand_all / 5)
        assert pass_k["pass_any_rate"] == pytest.approx(hand_any / 5)
    assert run.report["per_contestant"]["scripted/a"]["pass_k"]["pass_all"] == 2
    assert run.report["per_contestant"]["scripted/b"]["pass_k"]["pass_any"] == 4


def _passed(answer: Answer) -> bool:
    return bool(answer.passed)  # the stored pass: the essay's grade is part of it


@pytest.mark.django_db(transaction=True)
def test_a_graded_task_goes_through_the_judge_and_an_unusable_grade_is_an_error_not_zero(
    tmp_path,
):
    PriceTable.objects.ensure_default()
    suite = textwrap.dedent(
        """\
        suite: graded
        version: 1
        models: [scripted/a, scripted/b]
        repeats: 3
        judge: {model: scripted/judge}
        tasks:
          - id: essay
            prompt: "Explain {{topic}}"
            judge: false
            grade: {rubric: "Clear and correct.", threshold: 0.75}
            cases: [{id: dns, vars: {topic: DNS}}]
        """
    )
    replies = tmp_path / "replies.yaml"
    replies.write_text(
        "a: {essay/dns: ['DNS maps names to addresses.']}\n"
        "b: {essay/dns: ['DNS is magic.']}\n"
        "judge:\n"
        '  grade/essay/dns: [\'{"reasoning": "ok", "score": 5}\', \'{"reasoning": "ok", '
        '"score": 3}\', "no idea"]\n'
    )
    (tmp_path / "graded.yaml").write_text(suite)
    loaded = load_suite(tmp_path / "graded.yaml")
    version, _ = SuiteVersion.objects.register_file(tmp_path / "graded.yaml", loaded)
    run = execute(store_plan(make_plan(version, loaded, RunOptions(replies=str(replies)))).id)

    assert run.status == Run.Status.DONE, run.detail
    grades = {
        (a.contestant, a.repeat): (a.grade_score, a.grade_passed)
        for a in Answer.objects.filter(run=run)
    }
    # repeat r of either contestant gets grade item r: 5 passes, 3 is 0.5 < 0.75, the third
    # is unusable twice (the retry gets the same item): an error, never a score of 0
    for contestant in ("scripted/a", "scripted/b"):
        assert grades[(contestant, 0)] == (5, True)
        assert grades[(contestant, 1)] == (3, False)
        assert grades[(contestant, 2)] == (None, None)
    unusable = Judgement.objects.filter(run=run, kind="grade", parse_status="unparseable")
    assert unusable.count() == 2 and all(j.retried for j in unusable)
    grade = run.report["per_contestant"]["scripted/a"]["grade"]
    assert grade == {"n": 2, "pass": 1, "mean": pytest.approx((1.0 + 0.5) / 2), "errors": 1}
    assert run.report["totals"]["judge_calls"] == 6 + 2  # one grade per answer, two retries
