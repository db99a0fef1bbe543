"""A scripted run of a suite with a three-criterion scorecard (issue 16): its
report["scorecard"] is the hand count below, the report's Scorecard section shows it, and
the min_score gate fails the run for the contestant under it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from runs.models import Run
from tests.helpers.factories import write_scripted_suite

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = """\
suite: scorecard-run
version: 1
models: [scripted/good, scripted/good@short, scripted/sloppy]
judge: {model: scripted/judge}
replies: replies.yaml
variants:
  short: {system: "Be brief."}
scorecard:
  - {criterion: accuracy, weight: 3, scorer: grade}
  - {criterion: format, weight: 1, scorer: schema}
  - {criterion: extraction, weight: 2, scorer: weighted_match}
gate:
  min_score: 0.5
tasks:
  - id: extract
    judge: false
    prompt: "List the use cases of: {{text}}"
    schema: {type: array}
    weighted_match:
      label: use_case
      threshold: 0.8
      fields:
        use_case: {weight: 1}
    cases:
      - id: one
        vars: {text: "Summarise this."}
        expected: [{use_case: Summarize}]
  - id: answer
    judge: false
    prompt: "Answer: {{q}}"
    grade: {rubric: "Is correct.", threshold: 0.5}
    cases:
      - {id: a, vars: {q: one}}
      - {id: b, vars: {q: two}}
      - {id: c, vars: {q: three}}
"""
REPLIES = """\
good:
  extract/one: ['[{"use_case": "Summarize"}]']
  answer/a: [one]
  answer/b: [two]
  answer/c: [three]
sloppy:
  extract/one: [here you go]
  answer/a: [{error: "boom"}]
  answer/b: [two-ish]
  answer/c: [three-ish]
judge:
  grade/answer/a: ['{"reasoning": "right", "score": 5}']
  grade/answer/b: ['{"reasoning": "weak", "score": 2}']
  grade/answer/c: [no score today]
"""


@pytest.fixture
def suite_path(tmp_path) -> Path:
    return write_scripted_suite(tmp_path, SUITE, REPLIES)


def _cell(score, passed, scored, errors, accuracy, format_, extraction) -> dict:
    def criterion(mean, pass_rate, n):
        return {"mean": mean, "pass_rate": pass_rate, "n": n}

    return {
        "score": score,
        "passed": passed,
        "scored": scored,
        "errors": errors,
        "criteria": {
            "accuracy": criterion(*accuracy),
            "format": criterion(*format_),
            "extraction": criterion(*extraction),
        },
    }


def test_the_report_scorecard_is_the_hand_count(suite_path, capsys):
    with pytest.raises(SystemExit) as exited:
        call_command("run", str(suite_path), "--json")
    assert exited.value.code == 1  # sloppy is under min_score
    report = Run.objects.get().report

    # good (and good@short, which gets the same replies):
    #   extract/one  schema pass, match 1.0 (no grade)   -> (1*1 + 2*1) / 3 = 1.0, passes
    #   answer/a     grade 5 -> 1.0 (no schema, match)    -> 1.0, passes
    #   answer/b     grade 2 -> 0.25, under 0.5           -> 0.25, fails
    #   answer/c     the judge's reply has no score       -> error
    #   score (1.0 + 1.0 + 0.25) / 3 = 0.75, 2 of 3 pass
    good = _cell(0.75, 2, 3, 1, (0.625, 0.5, 2), (1.0, 1.0, 1), (1.0, 1.0, 1))
    # sloppy:
    #   extract/one  not JSON: schema parse_fail 0, match 0 -> 0.0
    #   answer/a     provider error                         -> error
    #   answer/b     grade 2 -> 0.25                        -> 0.25
    #   answer/c     no usable grade                        -> error
    #   score (0.0 + 0.25) / 2 = 0.125, none passes
    sloppy = _cell(0.125, 0, 2, 2, (0.25, 0.0, 1), (0.0, 0.0, 1), (0.0, 0.0, 1))
    assert report["scorecard"] == {
        "criteria": [
            {"criterion": "accuracy", "weight": 3, "scorer": "grade"},
            {"criterion": "format", "weight": 1, "scorer": "schema"},
            {"criterion": "extraction", "weight": 2, "scorer": "weighted_match"},
        ],
        "cells": {"scripted/good": good, "scripted/good@short": good, "scripted/sloppy": sloppy},
    }
    gates = {(g["gate"], g["subject"]): g for g in report["gates"]}
    assert gates["min_score", "scripted/good"]["status"] == "passed"
    assert gates["min_score", "scripted/sloppy"]["message"] == (
        "scripted/sloppy: scorecard score 0.125 < 0.500"
    )
    assert json.loads(capsys.readouterr().out)["scorecard"] == report["scorecard"]


def test_the_report_files_show_the_scorecard(suite_path):
    with pytest.raises(SystemExit):
        call_command("run", str(suite_path), "--json")
    report = Run.objects.get().report
    markdown = (Path(report["report_path"]) / "report.md").read_text()
    section = markdown.split("## Scorecard")[1].split("\n## ")[0]

    assert "weights renormalised" in section
    assert "| score | 0.750 | 0.750 | 0.125 |" in section
    assert "| passed / scored | 2 / 3 | 2 / 3 | 0 / 2 |" in section
    assert "| errors (excluded) | 1 | 1 | 2 |" in section
    assert (
        "| `accuracy` (grade, weight 3) | 0.625, pass 0.500 (n=2) | 0.625, pass 0.500 (n=2) "
        "| 0.250, pass 0.000 (n=1) |" in section
    )
    html = (Path(report["report_path"]) / "report.html").read_text()
    assert "<code>extraction</code> (weighted_match, weight 2)" in html


def test_answers_jsonl_gives_each_answer_its_scorecard(suite_path):
    with pytest.raises(SystemExit):
        call_command("run", str(suite_path), "--json")
    directory = Path(Run.objects.get().report["report_path"])
    lines = [json.loads(line) for line in (directory / "answers.jsonl").read_text().splitlines()]
    cards = {(line["contestant"], line["case_id"]): line["scorecard"] for line in lines}

    assert cards["scripted/good", "one"] == {
        "score": 1.0,
        "passed": True,
        "error": None,
        "criteria": {
            "format": {"score": 1.0, "passed": True},
            "extraction": {"score": 1.0, "passed": True},
        },
    }
    assert cards["scripted/good", "b"] == {
        "score": 0.25,
        "passed": False,
        "error": None,
        "criteria": {"accuracy": {"score": 0.25, "passed": False}},
    }
    assert cards["scripted/sloppy", "c"] == {
        "score": None, "passed": None, "error": "grade_unusable", "criteria": {}
    }  # fmt: skip
    assert cards["scripted/sloppy", "a"]["error"] == "scripted"
