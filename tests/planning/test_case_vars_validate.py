"""`evalsite validate` and `evalsite run` refuse a check value or rubric naming a var a case
does not have, at its line and with exit 2, before anything is planned or spent — as they
refuse such a prompt (docs/checks.md#case-vars-in-checks-and-rubrics)."""

from __future__ import annotations

import pytest

from runs.models import PriceTable, Run
from tests.helpers.factories import run_command

pytestmark = pytest.mark.django_db

SUITE = """\
suite: mmlu-like
version: 1
models: [fake/small]
judge: {model: fake/large, rubric: "Prefer the answer that says {{answer}}."}
tasks:
  - id: quiz
    prompt: "{{question}} Reply with the letter."
    checks: [{equals: "{{answer}}"}]
    cases:
      - {id: one, vars: {question: "1+1? A) 2 B) 3", answer: A}}
      - {id: two, vars: {question: "2+2? A) 3 B) 4", anwser: B}}
"""


def test_validate_names_the_task_case_check_and_var_and_exits_2(tmp_path):
    PriceTable.objects.ensure_default()
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    code, out, err = run_command("validate", str(path))
    assert code == 2
    shown = out + err
    assert (
        f"{path}:11: tasks[0].cases[1]: case 'two' of task 'quiz' has no var for {{{{answer}}}} "
        "(used in tasks[0].checks[0].equals) - the case has var 'anwser'"
    ) in shown
    assert "(used in judge.rubric) - the case has var 'anwser'" in shown
    assert run_command("run", str(path), "--fake")[0] == 2
    assert not Run.objects.exists()
