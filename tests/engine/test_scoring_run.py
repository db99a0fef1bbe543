"""A scripted run is scored on its rows: schema, deterministic and execution checks."""

from __future__ import annotations

import pytest

from evalsite.core.suites import parse_suite
from runs.engine.runner import execute
from runs.models import Answer, PriceTable, Run, SuiteVersion
from runs.planning.planner import RunOptions, make_plan, store_plan

SUITE = """\
suite: scored
version: 1
models: [scripted/good, scripted/bad]
judge: {model: fake/large}
tasks:
  - id: shape
    prompt: "Give JSON for {{name}}"
    schema: {type: object, required: [name], properties: {name: {type: string}}}
    checks: [{json_path: {path: $.name, equals: Ada}}]
    cases: [{id: one, vars: {name: Ada}}]
  - id: words
    prompt: "Say hi to {{name}}"
    checks: [{contains: hello, case_sensitive: false}, {max_chars: 40}]
    cases: [{id: one, vars: {name: Ada}}]
  - id: code
    prompt: "Write add(a, b) in Python for {{name}}"
    check: {setup: "printf 'from impl import add\\\\nassert add(2, 3) == 5\\\\n' > t.py", run: 'cp "$ANSWER" impl.py && python3 t.py'}
    cases: [{id: one, vars: {name: Ada}}]
"""
REPLIES = """\
good:
  shape/one: ['{"name": "Ada"}']
  words/one: ["Hello Ada!"]
  code/one: ["```python\\ndef add(a, b):\\n    return a + b\\n```"]
bad:
  shape/one: ['{"nom": "Ada"}']
  words/one: ["Greetings, Ada, and a very long sentence after that."]
  code/one: ["```python\\ndef add(a, b):\\n    return a - b\\n```"]
"""


@pytest.mark.django_db(transaction=True)
def test_a_scripted_run_gets_exactly_the_verdicts_its_replies_were_written_for(tmp_path):
    PriceTable.objects.ensure_default()
    replies = tmp_path / "replies.yaml"
    replies.write_text(REPLIES)
    loaded = parse_suite(SUITE.encode(), filename="scored.yaml", origin="upload")
    version, _ = SuiteVersion.objects.register(loaded, SUITE, origin="upload")
    run = store_plan(make_plan(version, loaded, RunOptions(replies=str(replies))))
    run = execute(run.id)
    assert run.status == Run.Status.DONE
    verdicts = {
        (a.contestant, a.task_id): (a.schema_verdict, a.checks_passed, a.exec_verdict, a.passed)
        for a in Answer.objects.filter(run=run)
    }
    assert verdicts == {
        ("scripted/good", "shape"): ("pass", True, "", True),
        ("scripted/good", "words"): ("not_applicable", True, "", True),
        ("scripted/good", "code"): ("not_applicable", True, "pass", True),
        ("scripted/bad", "shape"): ("schema_fail", False, "", False),
        ("scripted/bad", "words"): ("not_applicable", False, "", False),
        ("scripted/bad", "code"): ("not_applicable", True, "fail", False),
    }
    bad_words = Answer.objects.get(run=run, contestant="scripted/bad", task_id="words")
    assert "hello" in bad_words.checks["note"]
    code = Answer.objects.get(run=run, contestant="scripted/good", task_id="code")
    assert code.exec_check["isolation"] == "bwrap"
