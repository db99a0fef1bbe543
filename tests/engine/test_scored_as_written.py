"""Each answer is scored as the shard's writer stores it (issue 31): its verdicts go into the
row values the writer already writes, so the run's end reads nothing back and updates no row
a second time. An answer whose case runs in the sandbox (an execution check) or runs the
suite's own code (a python check) is still scored after the calls, by ``score_run``, and the
verdicts stored either way are the ones ``score_run`` gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runs.engine import judging, phases, scoring
from runs.models import Answer, Judgement, PriceTable, Run
from runs.models.suites import forget_read_versions
from tests.helpers.factories import run_command, write_no_look_suite

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = """\
suite: as-written
version: 1
models: [fake/small, fake/large]
judge: {model: fake/large}
repeats: 2
tasks:
  - id: shape
    prompt: "Give JSON for {{who}}."
    schema: {type: object, properties: {name: {type: string}}}
    checks: [{json_valid: true}, {max_chars: 4000}]
    cases: [{id: ada, vars: {who: Ada}}, {id: bob, vars: {who: Bob}}]
  - id: words
    prompt: "Say hello to {{who}}."
    checks: [{regex: "[A-Za-z]"}, {not_contains: "{{who}} is absent"}, {max_chars: 40}]
    cases:
      - {id: ada, vars: {who: Ada}}
      - {id: own-code, vars: {who: Bob}, checks: [{python: "as_written_checks:short"}]}
      - {id: graded, vars: {who: Cy}, grade: {criteria: "Greets Cy."}}
  - id: usage
    judge: false
    prompt: "List the uses of {{what}}."
    weighted_match: {label: use, threshold: 0.5, fields: {use: {weight: 1}}}
    cases: [{id: one, vars: {what: a pen}, expected: [{use: write}]}]
  - id: code
    judge: false
    prompt: "Write add(a, b) for {{who}}."
    check: {run: 'python3 "$ANSWER"'}
    cases: [{id: one, vars: {who: Ada}}]
"""
CHECKS = "def short(text, case_vars):\n    return len(text) < 10_000\n"
# Scored after the calls: the answers of the cases with a python or an execution check.
AFTER = {("words", "own-code"), ("code", "one")}
VERDICTS = ("schema_verdict", "schema_error", "parsed_json", "checks", "checks_passed",
            "exec_check", "exec_verdict", "match_score", "match_passed", "match_detail",
            "passed")  # fmt: skip


@pytest.fixture
def scored(monkeypatch) -> list[tuple[str, int]]:
    """(run id, answers score_run scored) for each time the engine calls it."""
    real = scoring.score_run
    calls = []

    def counted(run):
        count = real(run)
        calls.append((run.pk, count))
        return count

    monkeypatch.setattr(judging, "score_run", counted)
    monkeypatch.setattr(phases, "score_run", counted)
    return calls


@pytest.fixture
def suite_path(tmp_path: Path) -> Path:
    PriceTable.objects.ensure_default()
    (tmp_path / "as_written_checks.py").write_text(CHECKS)
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return path


def _verdicts(run: Run) -> dict[int, tuple]:
    rows = Answer.objects.filter(run=run, status=Answer.Status.DONE)
    return {row[0]: row[1:] for row in rows.values_list("pk", *VERDICTS, "grade_passed")}


def _as_score_run_scores_them(run: Run) -> dict[int, tuple]:
    """The run's verdicts stored again by score_run, from unscored rows (a shard of an
    older process wrote them), in a process that parses the stored version."""
    blank = dict.fromkeys(VERDICTS) | {"schema_verdict": "", "schema_error": "", "exec_verdict": ""}
    Answer.objects.filter(run=run).update(**blank, scored_at=None)
    forget_read_versions()
    scoring.score_run(run)
    return _verdicts(run)


def _duration_free(verdicts: dict[int, tuple]) -> dict[int, tuple]:
    """The sandbox measures each execution check's duration anew."""
    at = VERDICTS.index("exec_check")
    return {
        pk: (*row[:at], row[at] and {**row[at], "duration_ms": 0}, *row[at + 1 :])
        for pk, row in verdicts.items()
    }


def test_answers_are_scored_as_written_and_score_run_scores_only_what_waits(suite_path, scored):
    code, _, err = run_command("run", str(suite_path), "--fake")

    assert code == 0, err
    run = Run.objects.get()
    assert run.status == Run.Status.DONE
    after = Answer.objects.filter(run=run, task_id__in=["words", "code"])
    waiting = [a for a in after if (a.task_id, a.case_id) in AFTER]
    assert len(waiting) == 8  # two cases, two contestants, two repeats
    assert scored == [(run.pk, 8)]
    done = Answer.objects.filter(run=run, status=Answer.Status.DONE)
    assert done.count() == 28 and not done.filter(scored_at__isnull=True).exists()
    assert Judgement.objects.filter(run=run, kind=Judgement.Kind.GRADE).count() == 4
    stored = _verdicts(run)
    assert _duration_free(_as_score_run_scores_them(run)) == _duration_free(stored)


def test_a_cached_rerun_scores_its_hits_as_written(suite_path, scored):
    assert run_command("run", str(suite_path), "--fake")[0] == 0

    code, _, err = run_command("run", str(suite_path), "--fake")

    assert code == 0, err
    rerun = Run.objects.order_by("-created_at").first()
    assert Answer.objects.filter(run=rerun, cached=True).count() == 28
    assert scored[-1] == (rerun.pk, 8)
    stored = _verdicts(rerun)
    assert _duration_free(_as_score_run_scores_them(rerun)) == _duration_free(stored)


def test_a_no_look_run_stores_sealed_verdicts_as_written(tmp_path, scored):
    code, _, err = run_command("run", str(write_no_look_suite(tmp_path)))

    assert code == 0, err
    run = Run.objects.get()
    assert scored == [(run.pk, 0)]
    answer = Answer.objects.get(run=run)
    assert (answer.text, answer.passed, answer.scored_at is not None) == ("", True, True)
    assert answer.checks["note"] is None
