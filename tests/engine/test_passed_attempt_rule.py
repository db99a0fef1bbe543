"""Issue 28 items 6 and 9: one definition of a passed attempt (schema, checks, execution,
grade), read by the per-case diff, pass^k, McNemar, the answers export and the pass rates;
and the schema-pass rate counted over the answers that had a schema."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from runs.models import Answer, Run
from tests.helpers.factories import run_command, write_scripted_suite

pytestmark = pytest.mark.django_db(transaction=True)

GRADED = """\
suite: graded-diff
version: 1
models: [scripted/a]
repeats: 2
replies: replies.yaml
judge: {model: scripted/judge}
tasks:
  - id: essay
    prompt: "Explain {{topic}}"
    judge: false
    checks: [{min_chars: 5}]
    grade: {rubric: "Clear and correct.", threshold: 0.75}
    cases: [{id: dns, vars: {topic: DNS}}, {id: tcp, vars: {topic: TCP}}]
"""


def graded_replies(dns: str, tcp: str, dns_grades: list[int], tcp_grades: list[int]) -> str:
    """Every answer passes its check; the scripted judge grades repeat r with item r."""

    def grades(scores: list[int]) -> str:
        return json.dumps([json.dumps({"reasoning": "r", "score": s}) for s in scores])

    return (
        f"a: {{essay/dns: [{json.dumps(dns)}], essay/tcp: [{json.dumps(tcp)}]}}\n"
        "judge:\n"
        f"  grade/essay/dns: {grades(dns_grades)}\n"
        f"  grade/essay/tcp: {grades(tcp_grades)}\n"
    )


def two_graded_runs(folder: Path) -> tuple[Run, Run]:
    """Run 1: every grade passes. Run 2: every check still passes, but the grade fails on
    dns's second repeat and on both of tcp's (2 of 5 is 0.25 < 0.75)."""
    path = write_scripted_suite(
        folder, GRADED, graded_replies("DNS maps names.", "TCP is reliable.", [5, 5], [5, 5])
    )
    code, _, err = run_command("run", str(path))
    assert code == 0, err
    (folder / "replies.yaml").write_text(
        graded_replies("DNS maps names to IPs.", "TCP retransmits.", [5, 2], [2, 2])
    )
    code, _, err = run_command("run", str(path))
    assert code == 0, err
    first, second = Run.objects.order_by("created_at")
    return first, second


def test_a_failed_grade_fails_the_attempt_in_the_diff_mcnemar_pass_k_and_the_export(tmp_path):
    first, second = two_graded_runs(tmp_path)
    # the checks passed everywhere; the grades did not
    assert not Answer.objects.filter(run=second, checks_passed=False).exists()
    assert Answer.objects.filter(run=second, grade_passed=False).count() == 3

    # the per-case diff counts a failed grade as a failed attempt
    code, out, _ = run_command("compare", first.id, second.id, "--cases")
    assert "essay/dns  2/2  1/2  worse" in out
    assert "essay/tcp  2/2  0/2  worse" in out
    assert "cases: 0 better, 0 same, 2 worse, 0 new, 0 gone" in out
    # McNemar reads the same attempts: 4 of 4 passed, then 1 of 4 (3 units lost, 2 cases)
    assert "scripted/a: pass rate -0.750 (lost 3, gained 0)" in out

    # pass^k and the pass rate read them too
    pass_k = second.__class__.objects.get(pk=second.pk).report["per_contestant"]["scripted/a"]
    assert (pass_k["pass_k"]["pass_all"], pass_k["pass_k"]["pass_any"]) == (0, 1)
    assert pass_k["pass_k"]["answers_passed"] == 1

    # answers.jsonl and the CSV never say passed beside a failed grade
    lines = [
        json.loads(line)
        for line in (Path(second.report["report_path"]) / "answers.jsonl").read_text().splitlines()
    ]
    assert sorted((x["case_id"], x["repeat"], x["passed"]) for x in lines) == [
        ("dns", 0, True), ("dns", 1, False), ("tcp", 0, False), ("tcp", 1, False),
    ]  # fmt: skip
    code, out, _ = run_command("report", second.id, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert sorted((r["case"], r["repeat"], r["passed"]) for r in rows) == [
        ("dns", "0", "true"), ("dns", "1", "false"), ("tcp", "0", "false"), ("tcp", "1", "false"),
    ]  # fmt: skip


# --- item 9: the schema-pass rate is over the answers that had a schema ---------------------

MIXED = """\
suite: mixed-schema
version: 1
models: [scripted/a, scripted/b]
replies: replies.yaml
judge: {model: scripted/judge}
tasks:
  - id: extract
    prompt: "The SKU of {{item}} as JSON"
    schema: {type: object, required: [sku], properties: {sku: {type: string}}}
    cases: [{id: x, vars: {item: X}}, {id: y, vars: {item: Y}}]
  - id: greet
    prompt: "Greet {{who}}"
    cases: [{id: ana, vars: {who: Ana}}, {id: bo, vars: {who: Bo}}, {id: cy, vars: {who: Cy}}]
"""
WINS = '[\'{"reason": "r", "winner": "2"}\', \'{"reason": "r", "winner": "1"}\']'
MIXED_REPLIES = f"""\
a: {{extract/x: '{{"sku": "A"}}', extract/y: '{{"sku": "A"}}', greet/ana: Hello Ana,
    greet/bo: Hello Bo, greet/cy: Hello Cy}}
b: {{extract/x: '{{"sku": "B"}}', extract/y: not json, greet/ana: Hi Ana, greet/bo: Hi Bo,
    greet/cy: Hi Cy}}
judge:
  judge/extract/x: {WINS}
  judge/extract/y: {WINS}  # never asked: b's answer is excluded before the judge
  judge/greet/ana: {WINS}
  judge/greet/bo: {WINS}
  judge/greet/cy: {WINS}
"""


def test_the_schema_pass_rate_counts_only_the_answers_that_had_a_schema(tmp_path):
    path = write_scripted_suite(tmp_path, MIXED, MIXED_REPLIES)
    code, out, err = run_command("run", str(path))
    assert code == 0, err
    report = Run.objects.get().report
    # b: 2 answers had a schema, 1 passed it; its 3 greetings had none and are not in n
    schema = report["per_contestant"]["scripted/b"]["schema"]
    assert (schema["n"], schema["pass"], schema["rate"]) == (2, 1, 0.5)
    assert report["per_contestant"]["scripted/a"]["schema"]["rate"] == 1.0
    line = report["win_rates"]["scripted/b"]
    assert (line["schema_pass_rate"], line["schema_n"]) == (0.5, 2)
    assert "  scripted/b  0.500   n/a" in out  # the summary table's schema column
    markdown = (Path(report["report_path"]) / "report.md").read_text()
    assert "0.500 (n=2)" in markdown
    # the matrix still counts every answer: b passed 4 of its 5
    cell = next(c for c in report["matrix"]["cells"] if c["contestant"] == "scripted/b")
    assert (cell["passed"], cell["scored"]) == (4, 5)


def test_with_no_schema_in_the_run_there_is_no_schema_pass_rate(tmp_path):
    first, _ = two_graded_runs(tmp_path)
    schema = first.report["per_contestant"]["scripted/a"]["schema"]
    assert (schema["n"], schema["rate"]) == (0, None)
    code, out, _ = run_command("compare", first.id, first.id)
    assert "schema pass scripted/a" not in out


def test_the_diff_counts_attempts_as_pass_k_does_never_an_answer_not_asked_for():
    from evalsite.core.report.case_diff import Attempts
    from runs.results.case_diff import run_attempts
    from tests.helpers.factories import make_answer, make_run

    run = make_run(contestants=["fake/small"], repeats=3, status=Run.Status.CANCELLED)
    make_answer(run, "greet", "one", "fake/small", repeat=0, passed=True)
    make_answer(run, "greet", "one", "fake/small", repeat=1, status="error", passed=None)
    make_answer(run, "greet", "one", "fake/small", repeat=2, status="pending", passed=None)
    # the stopped run answered 2 of 3: an error is a failed attempt, a pending one is none
    assert run_attempts(run) == {"greet/one": Attempts(1, 2)}


def test_the_migration_fails_old_rows_that_kept_passed_beside_a_failed_or_missing_grade():
    import importlib

    from django.apps import apps

    from runs.models import Judgement
    from tests.helpers.factories import make_answer, make_run

    migration = importlib.import_module("runs.migrations.0015_graded_answers_pass_with_their_grade")
    run = make_run(contestants=["fake/small"])
    rows = {
        "failed": make_answer(run, "t", "a", "fake/small", passed=True, grade_passed=False),
        "unusable": make_answer(run, "t", "b", "fake/small", passed=True, grade_passed=None),
        "passed": make_answer(run, "t", "c", "fake/small", passed=True, grade_passed=True),
        "ungraded": make_answer(run, "t", "d", "fake/small", passed=True),
    }
    for name in ("failed", "unusable", "passed"):
        answer = rows[name]
        Judgement.objects.create(
            run=run, kind="grade", answer=answer, judge_model="fake/large", request={},
            request_hash=f"g-{name}", task_id="t", case_id=answer.case_id,
        )  # fmt: skip
    migration.graded_pass(apps, None)
    assert {name: Answer.objects.get(pk=a.pk).passed for name, a in rows.items()} == {
        "failed": False, "unusable": False, "passed": True, "ungraded": True,
    }  # fmt: skip
