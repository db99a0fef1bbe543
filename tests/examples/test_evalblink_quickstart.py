"""examples/evalblink-quickstart.yaml, evalblink's quickstart benchmark in evalsite's format
(issue 16): it validates with no warning, runs with --fake to the end (its gate failing on
the fake's answers), and runs offline on its scripted replies, printing each contestant's
tags under the floor and the frontier's three facts."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command

from evalsite.core.report.summary import contestant_table, summary_lines
from runs.models import Price, PriceTable, Run

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = Path(__file__).resolve().parents[2] / "examples" / "evalblink-quickstart.yaml"
CELLS = [f"scripted/{model}@{prompt}" for model in ("mini", "sonnet", "nano") for prompt in ("v1", "v2")]  # fmt: skip
SCRIPTED = ("--models", ",".join(CELLS), "--judge", "scripted/judge")


@pytest.fixture(autouse=True)
def prices():
    PriceTable.objects.ensure_default()


def run_example(capsys, *options: str) -> tuple[int, str, dict]:
    with pytest.raises(SystemExit) as exited:
        call_command("run", str(SUITE), *options)
    return exited.value.code, capsys.readouterr().out, Run.objects.get().report


def test_the_example_validates_with_no_warning(capsys):
    try:
        call_command("validate", str(SUITE))
    except SystemExit as exited:
        assert exited.code == 0
    out, err = capsys.readouterr()
    assert "ok: " in out and "1 tasks, 11 cases" in out
    assert "warning" not in (out + err).lower()


def test_the_fake_runs_it_to_the_end_and_the_gate_holds_the_shipped_combination(capsys):
    code, out, report = run_example(capsys, "--fake")
    assert report["status"] == "done"
    assert [cell["contestant"] for cell in report["matrix"]["cells"]] == [
        "openai/gpt-4o-mini@v1", "openai/gpt-4o-mini@v2",
        "anthropic/claude-sonnet-4-6@v1", "anthropic/claude-sonnet-4-6@v2",
        "openai/gpt-4.1-nano@v1", "openai/gpt-4.1-nano@v2",
    ]  # fmt: skip
    # the fake's answers are words of the prompt, not labels: gpt-4o-mini@v2 is under 0.85
    assert [(g["gate"], g["subject"], g["status"]) for g in report["gates"]] == [
        ("min_score", "openai/gpt-4o-mini@v2", "failed")
    ]
    assert code == 1
    assert "gate failed: min_score - openai/gpt-4o-mini@v2: scorecard score" in out


def test_the_scripted_run_keeps_tags_of_few_cases_unflagged_and_prints_the_frontier(capsys):
    code, out, report = run_example(capsys, *SCRIPTED)
    # the gate names no scripted contestant: not evaluated, named, and the run passes
    assert code == 0 and report["gates_passed"] is True
    assert [(g["subject"], g["status"]) for g in report["gates"]] == [
        ("openai/gpt-4o-mini@v2", "not_evaluated")
    ]
    assert "  gate not evaluated: min_score - openai/gpt-4o-mini@v2: not a contestant" in out
    # mini@v1 misses conv-004 (order, edge_case, non_english) and conv-008 (billing,
    # edge_case, non_english): edge_case 3/5, non_english 1/3; billing 4/5, order 4/5.
    # Under the floor, but over 5 and 3 cases: too few to test, so not flagged (issue 27)
    mini = {row["tag"]: row["contestants"]["scripted/mini@v1"] for row in report["per_tag"]}
    assert [tag for tag, cell in mini.items() if cell["below"]] == ["edge_case", "non_english"]
    assert not any(cell["flagged"] for cell in mini.values())
    assert "tags pass below" not in out and "tag pass below" not in out
    # sonnet@v2 passes all 11; its one rival at 10/11 is 9 points below
    assert "    highest score: scripted/sonnet@v2 (1.000)" in out
    # scripted models have no price row: the cost facts have no cell to state
    assert (
        "    cheapest within 5 points of the highest (if uncached, per scored answer): "
        "none (no priced cell with a score)" in out
    )
    assert "    not beaten on both score and cost: none (no priced cell with a score)" in out
    markdown = (Path(report["report_path"]) / "report.md").read_text()
    tags = markdown.split("## Per tag", 1)[1].split("\n## ", 1)[0]
    few, untested = "(n=3 cases)", "under the floor, too few cases to test"
    interval = "no interval (too few cases: 3; an interval needs 8)"
    assert (
        f"| `non_english` | 0.333 {few} {untested} | 0.667 {few} {untested} "
        f"| 1.000 {interval} {few} |"
    ) in tags


def test_priced_scripted_cells_give_the_hand_counted_frontier(capsys):
    # Output $/Mtok of the models each stands for (gpt-4o-mini 0.6, sonnet 15, gpt-4.1-nano
    # 0.4), input at $0: a cell costs its labels' length, ⌈characters / 4⌉ tokens each:
    # order_issue 3, billing 2, product_question 4, other 2, "Billing." 2. All right:
    # 3+2+2+3+3+2+4+2+3+2+3 = 29 tokens over the 11 cases.
    #   mini@v1    conv-004 other (−1), conv-008 "Billing." (0)    28 × 0.6 = $0.0000168 / 11
    #   mini@v2    conv-008 order_issue (+1)                        30 × 0.6 = $0.0000180 / 11
    #   sonnet@v1  conv-003 order_issue (+1)                        30 × 15  = $0.000450  / 11
    #   sonnet@v2  all right                                        29 × 15  = $0.000435  / 11
    #   nano@v1    +1 (conv-003) −1 (conv-004) −2 (the error) −1 (conv-011)
    #                                                               26 × 0.4 = $0.0000104 / 10
    #   nano@v2    −1 (conv-004) +2 (conv-010 product_question)     30 × 0.4 = $0.0000120 / 11
    # per scored answer: mini 1.527e-6 and 1.636e-6, sonnet 40.9e-6 and 39.5e-6, nano
    # 1.04e-6 and 1.091e-6; scores 9/11, 10/11, 10/11, 11/11, 7/10, 9/11.
    # Within 5 points of 1.0 is sonnet@v2 alone. Beaten on both: mini@v1 (by nano@v2: the
    # same 9/11, cheaper) and sonnet@v1 (by mini@v2: the same 10/11, cheaper).
    table = PriceTable.objects.active()
    for model, output in (("mini", "0.6"), ("sonnet", "15"), ("nano", "0.4")):
        Price.objects.create(
            table=table, model=f"scripted/{model}", input_per_mtok=Decimal(0),
            output_per_mtok=Decimal(output),
        )  # fmt: skip
    code, out, report = run_example(capsys, *SCRIPTED)
    assert code == 0
    cells = {cell["contestant"]: cell for cell in report["matrix"]["cells"]}
    assert {name: (c["passed"], c["scored"], c["errors"]) for name, c in cells.items()} == {
        "scripted/mini@v1": (9, 11, 0), "scripted/mini@v2": (10, 11, 0),
        "scripted/sonnet@v1": (10, 11, 0), "scripted/sonnet@v2": (11, 11, 0),
        "scripted/nano@v1": (7, 10, 1), "scripted/nano@v2": (9, 11, 0),
    }  # fmt: skip
    assert cells["scripted/nano@v1"]["cost_per_scored_usd"] == 0.00000104
    frontier = report["frontier"]
    assert frontier["cheapest_within"] == ["scripted/sonnet@v2"]
    assert frontier["cheapest_within_cost_usd"] == round(0.000435 / 11, 9)
    not_beaten = ["scripted/mini@v2", "scripted/sonnet@v2", "scripted/nano@v1", "scripted/nano@v2"]
    assert frontier["not_beaten"] == not_beaten
    assert "    not beaten on both score and cost: " + ", ".join(not_beaten) in out
    assert (
        "    cheapest within 5 points of the highest (if uncached, per scored answer): "
        "scripted/sonnet@v2 ($0.000040)" in out
    )


def test_a_run_whose_judge_only_grades_says_so_and_calls_nothing_uncalibrated(capsys):
    # Every task is `judge: false` (the judge grades cases): there are no win-rates, so the
    # summary must not print "win-rate n/a … n=0" lines or warn that they are UNCALIBRATED.
    code, _, report = run_example(capsys, *SCRIPTED)
    assert code == 0

    assert report["pairwise"] is False
    assert not any("UNCALIBRATED" in warning for warning in report["warnings"])
    lines = summary_lines(report)
    assert "  no task is judged in pairs: no win-rates (the judge grades answers)" in lines
    assert not any(" win-rate " in line for line in lines)
    table = contestant_table(report)
    assert "UNCALIBRATED" not in "\n".join(table) and "no pairs" in table[2]
