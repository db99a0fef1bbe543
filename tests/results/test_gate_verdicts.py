"""Issue 28 items 4 and 5: a gate never vanishes and every non-zero exit says why.

A per-contestant gate naming a contestant the run does not have is refused where the suite's
own models run (validate, `run` without --models) and is a named "not evaluated" result when
--models replaced them (failing only under --strict-gates); `on_below_floor: fail` is a gate
result like the others, so the line that exits 1 is printed and report.json agrees."""

from __future__ import annotations

import json
from pathlib import Path

from evalsite.core.gates import check_gates
from tests.helpers.cli import evalsite, sqlite_rows
from tests.results.test_report_cli import _write

GHOST_SUITE = """\
suite: ghosts
version: 1
models: [fake/small, fake/large]
tasks:
  - id: greet
    prompt: "Say hello to {{who}}."
    cases:
      - {id: one, vars: {who: Ada}}
      - {id: two, vars: {who: Grace}}
gate:
  min_score: {GATED: 0.0}
"""


def _ghost_suite(tmp_path: Path, gated: str) -> Path:
    suite = tmp_path / "ghosts.yaml"
    suite.write_text(GHOST_SUITE.replace("GATED", gated))
    return suite


# --- the pure check ------------------------------------------------------------------------


def test_a_gate_naming_a_contestant_not_in_the_run_is_a_named_not_evaluated_result():
    report = {"contestants": ["base", "a"], "scorecard": {"cells": {"a": {"score": 0.9}}}}
    gate = {"min_score": {"a": 0.5, "ghost": 0.5}, "min_win_rate_lower_bound": {"ghost": 0.4}}

    results = {(r.gate, r.subject): r for r in check_gates(report, gate)}
    strict = {(r.gate, r.subject): r for r in check_gates(report, gate, strict=True)}

    assert results["min_score", "a"].status == "passed"
    ghost = results["min_score", "ghost"]
    assert ghost.status == "not_evaluated" and not ghost.failed
    assert ghost.message == (
        "ghost: not a contestant of this run (base, a); min_score was not evaluated for it"
    )
    assert results["min_win_rate_lower_bound", "ghost"].status == "not_evaluated"
    assert strict["min_score", "ghost"].status == "failed"
    assert strict["min_score", "ghost"].message.endswith("(--strict-gates)")


def test_the_floor_is_a_gate_result_when_the_suite_says_fail():
    below = {"contestants": ["b", "a"], "headline_eligible": False,
             "calibration": {"reason": "kappa 0.25 over 12 labels is below the floor 0.40"}}  # fmt: skip

    (result,) = check_gates(below, {}, on_below_floor="fail")

    assert (result.gate, result.subject, result.status) == ("on_below_floor", "run", "failed")
    assert result.message == (
        "the judge is below its calibration floor (judge.calibration.on_below_floor: fail): "
        "kappa 0.25 over 12 labels is below the floor 0.40"
    )
    assert check_gates(below, {}, on_below_floor="flag") == []
    assert check_gates(below | {"headline_eligible": True}, {}, on_below_floor="fail")[
        0
    ].status == ("passed")


# --- through the console script -----------------------------------------------------------


def test_validate_and_a_run_of_the_suites_models_refuse_a_gate_on_an_unknown_contestant(tmp_path):
    suite = _ghost_suite(tmp_path, "fake/ghost")
    data = tmp_path / "data"

    validated = evalsite(data, "validate", str(suite))
    ran = evalsite(data, "run", str(suite), "--fake")

    message = (
        "gate.min_score: 'fake/ghost' is not one of the suite's models (fake/small, "
        "fake/large): the gate would never be evaluated"
    )
    assert validated.returncode == 2 and message in validated.stderr, validated.stderr
    assert ran.returncode == 2 and message in ran.stderr, ran.stderr
    assert sqlite_rows(data, "select count(*) from runs_answer") == [(0,)]


def test_models_that_replace_the_gated_one_give_a_visible_not_evaluated_gate(tmp_path):
    suite = _ghost_suite(tmp_path, "fake/large")
    data = tmp_path / "data"

    ran = evalsite(data, "run", str(suite), "--fake", "--models", "fake/small")
    report = json.loads(evalsite(data, "report", "latest", "--json").stdout)
    strict = evalsite(data, "run", str(suite), "--fake", "--models", "fake/small", "--strict-gates")
    strict_report = json.loads(evalsite(data, "report", "latest", "--json").stdout)

    line = (
        "min_score - fake/large: not a contestant of this run (fake/small); min_score was not "
        "evaluated for it"
    )
    assert ran.returncode == 0, ran.stderr
    assert f"  gate not evaluated: {line}" in ran.stdout.splitlines()
    assert [(g["gate"], g["subject"], g["status"]) for g in report["gates"]] == [
        ("min_score", "fake/large", "not_evaluated")
    ]
    assert report["gates_passed"] is True
    md = (Path(report["report_path"]) / "report.md").read_text()
    assert "NOT EVALUATED" in md and "The suite has no gate: block" not in md
    assert strict.returncode == 1, strict.stderr
    assert f"  gate failed: {line} (--strict-gates)" in strict.stdout.splitlines()
    assert strict_report["gates_passed"] is False


def test_on_below_floor_fail_names_its_reason_and_report_json_agrees(tmp_path):
    suite, replies = _write(tmp_path, min_labels=30, on_below="fail")
    data = tmp_path / "data"

    shown = evalsite(data, "run", str(suite), "--replies", str(replies))
    as_json = evalsite(data, "run", str(suite), "--replies", str(replies), "--json")
    report = json.loads(as_json.stdout)

    assert shown.returncode == 1 and as_json.returncode == 1
    line = (
        "gate failed: on_below_floor - the judge is below its calibration floor "
        "(judge.calibration.on_below_floor: fail): kappa 1.00 (almost perfect) over 10 labels; "
        "the gate needs 30"
    )
    assert f"  {line}" in shown.stdout.splitlines(), shown.stdout
    assert line in as_json.stderr.splitlines(), as_json.stderr  # stdout is the JSON
    assert report["gates_passed"] is False
    assert [(g["gate"], g["status"]) for g in report["gates"]] == [("on_below_floor", "failed")]


def test_a_failing_gate_under_json_says_why_on_stderr(tmp_path):
    suite, replies = _write(tmp_path, min_labels=10)
    suite.write_text(
        suite.read_text().replace("labels:\n", "gate:\n  min_win_rate_lower_bound: 0.9\nlabels:\n")
    )

    ran = evalsite(tmp_path / "data", "run", str(suite), "--replies", str(replies), "--json")

    assert ran.returncode == 1
    assert json.loads(ran.stdout)["gates_passed"] is False
    assert (
        "gate failed: min_win_rate_lower_bound - scripted/cand: win-rate lower bound 0.575 < 0.900"
        in ran.stderr.splitlines()
    ), ran.stderr


def test_a_run_that_failed_under_json_says_why_on_stderr(tmp_path):
    suite, replies = _write(tmp_path, min_labels=10)
    replies.write_text(
        "\n".join(
            line.split(":")[0] + ": [{error: provider down}]"
            if line.startswith("  ") and not line.startswith("  judge/")
            else line
            for line in replies.read_text().splitlines()
        )
        + "\n"
    )

    ran = evalsite(tmp_path / "data", "run", str(suite), "--replies", str(replies), "--json")

    assert ran.returncode == 3
    assert json.loads(ran.stdout)["status"] == "failed"
    assert "every answer failed; first error: provider down" in ran.stderr, ran.stderr
