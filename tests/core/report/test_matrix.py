"""The variants × models matrix and the frontier: a hand count of 2 models × 2 variants and
a scripted model, through the report builder, then the edge cases and every rendering."""

from __future__ import annotations

import re

import pytest

from evalsite.core.calibration import Calibration
from evalsite.core.report.build import AnswerRow, ReportInput, build_report
from evalsite.core.report.html import render_html
from evalsite.core.report.markdown import render_markdown
from evalsite.core.report.matrix import build_frontier, build_matrix, matrix_of
from evalsite.core.report.summary import matrix_lines, terminal_summary

MINI, HAIKU, SCRIPTED = "openai/gpt-4o-mini", "anthropic/claude-haiku-4-5", "scripted/good"
MINI_C, HAIKU_C = f"{MINI}@concise", f"{HAIKU}@concise"


def _answers(contestant: str, *, passed: int, errors: int = 0, cost: float | None) -> list:
    """Four cases: the first `errors` errored, then `passed` passed, the rest failed."""
    rows = []
    for index in range(4):
        error = index < errors
        rows.append(
            AnswerRow(
                task="t",
                case=f"c{index}",
                contestant=contestant,
                repeat=0,
                status="error" if error else "done",
                schema_verdict="" if error else "pass",
                passed=not error and index < errors + passed,
                latency_ms=None if error else 100 * (index + 1),
                input_tokens=None if error else 10,
                output_tokens=None if error else 5,
                cost_usd=None if error else cost,
                cost_if_uncached_usd=None if error else cost,
            )  # fmt: skip
        )
    return rows


def hand_counted(**overrides) -> dict:
    """mini: 3/4 passed at $0.0002 an answer; mini@concise: 3/3 and one error at $0.0005;
    haiku: 4/4 at $0.003; haiku@concise: every answer an error; scripted/good: 4/4, no price."""
    answers = [
        *_answers(MINI, passed=3, cost=0.0002),
        *_answers(MINI_C, passed=3, errors=1, cost=0.0005),
        *_answers(HAIKU, passed=4, cost=0.003),
        *_answers(HAIKU_C, passed=0, errors=4, cost=None),
        *_answers(SCRIPTED, passed=4, cost=None),
    ]
    data = ReportInput(
        run_id="r1", status="done", suite_name="s", suite_hash="ab" * 32,
        contestants=[MINI, MINI_C, HAIKU, HAIKU_C, SCRIPTED], answers=answers, pairs=[],
        calibration=Calibration(), **overrides,
    )  # fmt: skip
    return build_report(data)


@pytest.fixture(scope="module")
def report() -> dict:
    return hand_counted()


def test_the_matrix_counts_each_cell_by_hand(report):
    matrix = report["matrix"]
    assert matrix["score_from"] == "pass_rate"
    assert matrix["models"] == [MINI, HAIKU, SCRIPTED]
    assert matrix["variants"] == [None, "concise"]
    assert matrix["grid"] is True
    cells = {cell["contestant"]: cell for cell in matrix["cells"]}
    figures = {
        name: (c["score"], c["passed"], c["scored"], c["errors"], c["cost_per_scored_usd"])
        for name, c in cells.items()
    }
    assert figures == {
        MINI: (0.75, 3, 4, 0, 0.0002),
        MINI_C: (1.0, 3, 3, 1, 0.0005),  # the error is left out, not scored 0
        HAIKU: (1.0, 4, 4, 0, 0.003),
        HAIKU_C: (None, 0, 0, 4, None),
        SCRIPTED: (1.0, 4, 4, 0, None),
    }
    assert cells[MINI_C]["tokens"] == {"input": 30, "output": 15}
    assert cells[MINI_C]["cost_if_uncached_usd"] == 0.0015
    assert cells[MINI]["latency_p50_ms"] == 200
    assert (cells[MINI_C]["model"], cells[MINI_C]["variant"]) == (MINI, "concise")
    assert cells[SCRIPTED]["priced"] is False and cells[SCRIPTED]["cost_usd"] is None
    # the same count without the report's scorecard, from the per-contestant figures
    assert build_matrix(report | {"scorecard": None})["cells"] == matrix["cells"]


def test_the_frontier_states_the_hand_counted_facts(report):
    frontier = report["frontier"]
    assert frontier["points"] == 5.0
    assert frontier["highest_score"] == 1.0
    assert frontier["highest"] == [MINI_C, HAIKU, SCRIPTED]  # a three-way tie, all named
    assert frontier["cheapest_within"] == [MINI_C]  # mini is cheaper but 25 points below
    assert frontier["cheapest_within_cost_usd"] == 0.0005
    assert frontier["not_beaten"] == [MINI, MINI_C]  # haiku: same score, dearer
    assert frontier["no_score"] == [HAIKU_C]
    assert frontier["unpriced"] == [SCRIPTED]


def test_the_suites_points_widen_the_cheapest_within():
    frontier = hand_counted(frontier_points=30.0)["frontier"]
    assert frontier["points"] == 30.0
    assert frontier["cheapest_within"] == [MINI]


def _cell(name: str, score: float | None, cost: float | None) -> dict:
    return {"contestant": name, "score": score, "cost_per_scored_usd": cost}


def test_a_tie_on_score_and_cost_keeps_both_cells():
    frontier = build_frontier({"cells": [_cell("a", 0.9, 0.01), _cell("b", 0.9, 0.01)]})
    assert frontier["highest"] == ["a", "b"]
    assert frontier["cheapest_within"] == ["a", "b"]
    assert frontier["not_beaten"] == ["a", "b"]


def test_a_single_cell_is_every_fact():
    frontier = build_frontier({"cells": [_cell("only", 0.5, 0.02)]})
    assert frontier["highest"] == frontier["cheapest_within"] == frontier["not_beaten"] == ["only"]


def test_no_scores_and_no_prices_leave_the_facts_empty():
    frontier = build_frontier({"cells": [_cell("err", None, None), _cell("free", 0.8, None)]})
    assert frontier["highest"] == ["free"]
    assert frontier["cheapest_within"] == [] and frontier["not_beaten"] == []
    assert frontier["cheapest_within_cost_usd"] is None
    assert (frontier["no_score"], frontier["unpriced"]) == (["err"], ["free"])


def test_the_scorecard_score_is_read_when_the_report_has_one(report):
    scorecard = {
        "criteria": [{"name": "accuracy"}],
        "cells": {MINI: {"score": 0.82, "passed": 12, "scored": 15, "errors": 1}},
    }
    matrix = build_matrix(report | {"scorecard": scorecard})
    assert matrix["score_from"] == "scorecard"
    mini = matrix["cells"][0]
    assert (mini["score"], mini["passed"], mini["scored"], mini["errors"]) == (0.82, 12, 15, 1)
    assert matrix["cells"][1]["score"] is None  # not in the scorecard: no score, not 0
    assert build_matrix(report | {"scorecard": None})["score_from"] == "pass_rate"


def test_distinct_models_without_variants_still_get_cells_but_no_grid(report):
    two = {k: report[k] for k in ("per_contestant",)} | {"contestants": [MINI, HAIKU]}
    matrix, frontier = matrix_of(two)
    assert matrix["grid"] is False and len(matrix["cells"]) == 2
    assert frontier["not_beaten"] == [MINI, HAIKU]


# --- renderings ------------------------------------------------------------------------------


def test_the_markdown_has_the_matrix_after_the_win_rates(report):
    markdown = render_markdown(report)
    titles = re.findall(r"^## (.+)$", markdown, re.M)
    assert titles.index("Matrix") == titles.index("Win-rates \u2014 UNCALIBRATED") + 1
    section = markdown.split("## Matrix", 1)[1].split("\n## ", 1)[0]
    assert f"| `{MINI}` | `concise` | 1.000 | 3/3 | 1 | 30/15 |" in section
    assert f"| `{HAIKU}` | 1.000 (4/4) | n/a (0/0) |" in section  # the grid row
    assert f"| `{SCRIPTED}` | 1.000 (4/4) | - |" in section  # not run with concise
    assert (
        f"- cheapest within 5 points of the highest (if uncached, per scored answer): `{MINI_C}`"
        in section
    )  # noqa: E501
    assert f"- not beaten on both score and cost: `{MINI}`, `{MINI_C}`" in section
    assert f"- unpriced (cost unknown), left off the cost facts: `{SCRIPTED}`" in section
    assert "best" not in section.lower() and "recommend" not in section.lower()


def test_the_html_escapes_a_long_hostile_model_name_inside_a_scrolling_table():
    name = "openrouter/" + "very-long-model-name-" * 12 + "<script>alert(1)</script>"
    report = hand_counted()
    report = report | {"contestants": [name, *report["contestants"][1:]]}
    report["per_contestant"] = {name: report["per_contestant"][MINI]} | report["per_contestant"]
    del report["matrix"], report["frontier"]  # rebuilt from the renamed contestant
    page = render_html(report)
    section = page.split('<section id="matrix">', 1)[1].split("</section>", 1)[0]
    assert "<script>" not in section and "&lt;script&gt;" in section
    assert section.count('<div class="scroll"><table>') == 2  # the grid and the cells
    assert "<code>openrouter/very-long-model-name-" in section


def test_the_terminal_matrix_is_aligned_and_plain(report):
    lines = matrix_lines(report)
    table = lines[1 : 1 + 6]
    assert table[0].split() == ["model", "variant", "score", "pass/scored", "errors",
                                "tokens", "in/out", "cost", "if", "uncached", "per", "scored",
                                "p50"]  # fmt: skip
    starts = {line.index("pass/scored") if "pass/scored" in line else None for line in table[:1]}
    column = starts.pop()
    assert all(line[column - 2 : column] == "  " for line in table[1:])
    assert table[2].split()[:6] == [MINI, "concise", "1.000", "3/3", "1", "30/15"]
    assert "unpriced" in table[5]
    assert "    not beaten on both score and cost: " + f"{MINI}, {MINI_C}" in lines
    assert not any("\x1b" in line for line in lines)
    assert lines == [line for line in terminal_summary(report) if line in lines]


def test_the_terminal_matrix_colours_its_heads_only_when_asked(report):
    coloured = matrix_lines(report, colour=True)
    assert "\x1b[1m" in coloured[0] and "\x1b[1mmodel" in coloured[1]
    assert [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in coloured] == matrix_lines(report)


# --- the suite's points ----------------------------------------------------------------------

SUITE = """suite: s
version: 1
report: {frontier_points: POINTS}
tasks:
  - id: t
    prompt: "Say {{x}}"
    cases: [{id: c, vars: {x: hi}}]
"""


def test_the_suite_sets_the_frontier_points_under_report():
    from evalsite.core.suites import parse_suite

    assert (
        parse_suite(SUITE.replace("POINTS", "12").encode(), filename="s.yaml").frontier_points == 12
    )
    bare = SUITE.replace("report: {frontier_points: POINTS}\n", "")
    assert parse_suite(bare.encode(), filename="s.yaml").frontier_points == 5.0


def test_points_above_100_are_refused_naming_the_key():
    from evalsite.core.problems import SuiteError
    from evalsite.core.suites import parse_suite

    with pytest.raises(SuiteError) as refused:
        parse_suite(SUITE.replace("POINTS", "500").encode(), filename="s.yaml")
    assert "frontier_points" in str(refused.value)


def test_a_cell_exactly_the_points_below_the_highest_is_within_them():
    # 0.54 - 0.05 is 0.49000000000000005 in floats: unrounded, 0.49 fell outside
    frontier = build_frontier({"cells": [_cell("top", 0.54, 0.02), _cell("edge", 0.49, 0.01)]})
    assert frontier["cheapest_within"] == ["edge"]
    assert frontier["cheapest_within_cost_usd"] == 0.01


def test_costs_under_a_hundred_thousandth_of_a_dollar_are_compared_unrounded():
    # $0.0000101 and $0.0000103 an answer: 6 places made both $0.00001 a scored answer, a
    # tie, so both were "cheapest" and neither beat the other
    answers = [
        *_answers(MINI, passed=4, cost=0.0000101),
        *_answers(HAIKU, passed=4, cost=0.0000103),
    ]
    data = ReportInput(
        run_id="r1", status="done", suite_name="s", suite_hash="ab" * 32,
        contestants=[MINI, HAIKU], answers=answers, pairs=[], calibration=Calibration(),
    )  # fmt: skip
    report = build_report(data)
    frontier = report["frontier"]
    assert frontier["cheapest_within"] == [MINI]
    assert frontier["cheapest_within_cost_usd"] == 0.0000101
    assert frontier["not_beaten"] == [MINI]
    costs = [cell["cost_per_scored_usd"] for cell in report["matrix"]["cells"]]
    assert costs == [0.0000101, 0.0000103]
