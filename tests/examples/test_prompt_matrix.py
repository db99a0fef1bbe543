"""examples/prompt-matrix.yaml, the 2 models × 2 variants suite with a three-criterion
scorecard and a weighted_match task (issue 16): run offline on its scripted replies, its
report's scorecard, matrix and frontier are the hand count below; and --fake runs it to the
end with a matrix of four cells."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from django.core.management import call_command

from runs.models import Price, PriceTable, Run

pytestmark = pytest.mark.django_db(transaction=True)

SUITE = Path(__file__).resolve().parents[2] / "examples" / "prompt-matrix.yaml"
MINI, MINI_S, HAIKU, HAIKU_S = (
    "scripted/mini", "scripted/mini@strict", "scripted/haiku", "scripted/haiku@strict"
)  # fmt: skip
# Output $/Mtok of the models the scripted ones stand for (gpt-4.1-mini, claude-haiku-4-5);
# input at $0, so a cell's cost is its replies' length alone: characters ÷ 4, rounded up.
OUTPUT_PER_MTOK = {"scripted/mini": "1.6", "scripted/haiku": "5"}


def run_example(*options: str) -> dict:
    with pytest.raises(SystemExit) as exited:
        call_command("run", str(SUITE), *options, "--json")
    assert exited.value.code == 0
    return Run.objects.get().report


@pytest.fixture
def scripted_report() -> dict:
    PriceTable.objects.ensure_default()
    table = PriceTable.objects.active()
    for model, output in OUTPUT_PER_MTOK.items():
        Price.objects.create(
            table=table, model=model, input_per_mtok=Decimal(0), output_per_mtok=Decimal(output)
        )
    contestants = ",".join((MINI, MINI_S, HAIKU, HAIKU_S))
    return run_example("--models", contestants, "--judge", "scripted/judge")


# The hand count, from examples/prompt-matrix.replies.yaml.
#
# Per answer, with the scorecard extraction 3 (weighted_match), rules 1 (checks), quality 3
# (grade), renormalised over the criteria that apply (docs/scoring.md):
#   account-requests  (3 × match + 1 × json_valid) / 4
#   reply-draft       (1 × checks + 3 × grade) / 4
#   priority-label    exact_match alone: 1 or 0
# The match is (2 × request F1 + 1 × amount share + 1 × urgent share) / 4, passing at 0.8.
# The judge grades refund-denied 5 → (5 − 1) / 4 = 1.0 and outage-update 3 → 0.5, for every
# contestant; the grade passes at 0.75.
#
# mini:
#   seats-and-invoice     both requests right: match 1, JSON          → (3 + 1) / 4 = 1      pass
#   refund-and-downgrade  refund right, "cancel" for change_plan: F1 = 2PR / (P + R) with
#                         P = R = 1/2 → 0.5; amount 1/2, urgent 1/2 (the unpaired item
#                         scores 0): match (1 + 0.5 + 0.5) / 4 = 0.5 (fails 0.8); its JSON
#                         in a fenced block parses → (3 × 0.5 + 1) / 4 = 0.625      fail
#   refund-denied         checks pass, grade 1.0             → (1 + 3) / 4 = 1      pass
#   outage-update         checks pass, grade 0.5 (fails)     → (1 + 1.5) / 4 = 0.625 fail
#   checkout-down         "Priority: P1" is not P1           → 0                    fail
#   avatar-too-big        "P4"                               → 1                    pass
#   score (1 + 0.625 + 1 + 0.625 + 0 + 1) / 6 = 4.25 / 6 = 17/24, 3 of 6 pass
#   extraction (1 + 0.5) / 2 = 0.75, pass 1/2, n 2; rules 5 of 6 pass (all but
#   checkout-down); quality (1 + 0.5) / 2 = 0.75, pass 1/2, n 2
# mini@strict:
#   seats-and-invoice     1                                                          pass
#   refund-and-downgrade  labels right (F1 1), 192 is not 96 (amount 1/2), urgent 1:
#                         match (2 + 0.5 + 1) / 4 = 0.875 (passes) → (3 × 0.875 + 1) / 4
#                         = 0.90625                                                  pass
#   refund-denied         no "Priya" (contains fails), grade 1.0 → (0 + 3) / 4 = 0.75  fail
#   outage-update         checks pass, grade 0.5            → 0.625                  fail
#   checkout-down, avatar-too-big  bare labels              → 1, 1                   pass
#   score (1 + 0.90625 + 0.75 + 0.625 + 1 + 1) / 6 = 5.28125 / 6 = 169/192, 4 of 6 pass
#   extraction (1 + 0.875) / 2 = 0.9375, pass 1, n 2; rules 5 of 6 (all but refund-denied)
# haiku:
#   seats-and-invoice (a fenced block), refund-and-downgrade (96.00 is 96) → 1, 1     pass
#   refund-denied         1                                                          pass
#   outage-update         leaks INC-5521 (not_contains fails) → (0 + 1.5) / 4 = 0.375 fail
#   checkout-down 1 pass; avatar-too-big "P4." is not P4 → 0                         fail
#   score (1 + 1 + 1 + 0.375 + 1 + 0) / 6 = 4.375 / 6 = 35/48, 4 of 6 pass
#   extraction 1, pass 1, n 2; rules 4 of 6
# haiku@strict:
#   seats-and-invoice     a provider error: left out, an error
#   the other five        1, 1, 0.625 (outage-update's grade), 1, 1; 4 of 5 pass
#   score 4.625 / 5 = 0.925; extraction 1, pass 1, n 1; rules 5 of 5
#
# Output tokens, ⌈characters / 4⌉ per reply in the file's order (the error has none):
#   mini          115, 142, 225, 162, 12, 2 chars → 29 + 36 + 57 + 41 + 3 + 1 = 167
#   mini@strict   115, 112, 196, 118, 2, 2 chars  → 29 + 28 + 49 + 30 + 1 + 1 = 138
#   haiku         129, 114, 230, 166, 2, 3 chars  → 33 + 29 + 58 + 42 + 1 + 1 = 164
#   haiku@strict  111, 207, 136, 2, 2 chars       → 28 + 52 + 34 + 1 + 1 = 116
# Cost at $1.60 (mini) and $5 (haiku) per million output tokens, and per scored answer:
#   mini          167 × 1.6e-6 = $0.0002672 / 6     haiku         164 × 5e-6 = $0.00082 / 6
#   mini@strict   138 × 1.6e-6 = $0.0002208 / 6     haiku@strict  116 × 5e-6 = $0.00058 / 5
#                 = $0.0000368                                    = $0.000116
SCORES = {MINI: Fraction(17, 24), MINI_S: Fraction(169, 192), HAIKU: Fraction(35, 48),
          HAIKU_S: Fraction(37, 40)}  # fmt: skip
COUNTS = {MINI: (3, 6, 0), MINI_S: (4, 6, 0), HAIKU: (4, 6, 0), HAIKU_S: (4, 5, 1)}
CRITERIA = {  # criterion: (mean, pass rate, n)
    MINI: {"extraction": (0.75, 0.5, 2), "rules": (5 / 6, 5 / 6, 6), "quality": (0.75, 0.5, 2)},
    MINI_S: {"extraction": (0.9375, 1.0, 2), "rules": (5 / 6, 5 / 6, 6),
             "quality": (0.75, 0.5, 2)},
    HAIKU: {"extraction": (1.0, 1.0, 2), "rules": (4 / 6, 4 / 6, 6), "quality": (0.75, 0.5, 2)},
    HAIKU_S: {"extraction": (1.0, 1.0, 1), "rules": (1.0, 1.0, 5), "quality": (0.75, 0.5, 2)},
}  # fmt: skip
OUTPUT_TOKENS = {MINI: 167, MINI_S: 138, HAIKU: 164, HAIKU_S: 116}
COST = {MINI: 0.0002672, MINI_S: 0.0002208, HAIKU: 0.00082, HAIKU_S: 0.00058}


def test_the_scorecard_cells_are_the_hand_count(scripted_report):
    scorecard = scripted_report["scorecard"]
    assert scorecard["criteria"] == [
        {"criterion": "extraction", "weight": 3, "scorer": "weighted_match"},
        {"criterion": "rules", "weight": 1, "scorer": "checks"},
        {"criterion": "quality", "weight": 3, "scorer": "grade"},
    ]
    # a set: PostgreSQL's jsonb keeps no key order (the pages list cells in contestant order)
    assert set(scorecard["cells"]) == {MINI, MINI_S, HAIKU, HAIKU_S}
    for name, cell in scorecard["cells"].items():
        # report.json keeps 6 places: 17/24 = 0.708333
        assert cell["score"] == round(float(SCORES[name]), 6), name
        assert (cell["passed"], cell["scored"], cell["errors"]) == COUNTS[name], name
        got = {c: (row["mean"], row["pass_rate"], row["n"]) for c, row in cell["criteria"].items()}
        want = {c: (round(m, 6), round(r, 6), n) for c, (m, r, n) in CRITERIA[name].items()}
        assert got == want, name


def test_the_matrix_cells_are_the_hand_count(scripted_report):
    matrix = scripted_report["matrix"]
    assert matrix["score_from"] == "scorecard"
    assert matrix["models"] == ["scripted/mini", "scripted/haiku"]
    assert matrix["variants"] == [None, "strict"]
    assert matrix["grid"] is True
    cells = {cell["contestant"]: cell for cell in matrix["cells"]}
    assert list(cells) == [MINI, MINI_S, HAIKU, HAIKU_S]
    for name, cell in cells.items():
        passed, scored, errors = COUNTS[name]
        # the matrix keeps 9 places (costs to the nano-dollar): 17/24 = 0.708333333
        assert cell["score"] == round(float(SCORES[name]), 9), name
        assert (cell["passed"], cell["scored"], cell["errors"]) == (passed, scored, errors)
        assert cell["tokens"]["output"] == OUTPUT_TOKENS[name], name
        assert cell["priced"] is True
        assert cell["cost_usd"] == cell["cost_if_uncached_usd"] == COST[name], name
        assert cell["cost_per_scored_usd"] == round(COST[name] / scored, 9), name


def test_the_frontier_is_the_hand_count(scripted_report):
    # highest: haiku@strict, 0.925. Within 5 points, a score of 0.875 or more: haiku@strict
    # and mini@strict (169/192 = 0.8802); the cheaper per scored answer is mini@strict
    # ($0.0000368 against $0.000116). Not beaten on both: mini@strict (it scores above mini
    # and haiku and costs less than either: $0.0000445 and $0.000137 per scored answer) and
    # haiku@strict (nothing scores higher).
    frontier = scripted_report["frontier"]
    assert frontier["points"] == 5.0
    assert frontier["highest"] == [HAIKU_S]
    assert frontier["highest_score"] == 0.925
    assert frontier["cheapest_within"] == [MINI_S]
    assert frontier["cheapest_within_cost_usd"] == 0.0000368
    assert frontier["not_beaten"] == [MINI_S, HAIKU_S]
    assert frontier["no_score"] == [] and frontier["unpriced"] == []


def test_without_price_rows_the_scripted_cells_are_unpriced_and_off_the_cost_facts():
    PriceTable.objects.ensure_default()
    contestants = ",".join((MINI, MINI_S, HAIKU, HAIKU_S))
    report = run_example("--models", contestants, "--judge", "scripted/judge")
    frontier = report["frontier"]
    assert frontier["highest"] == [HAIKU_S]
    assert frontier["cheapest_within"] == [] and frontier["not_beaten"] == []
    assert frontier["unpriced"] == [MINI, MINI_S, HAIKU, HAIKU_S]


def test_the_fake_runs_the_example_to_the_end_with_four_cells(capsys):
    PriceTable.objects.ensure_default()
    report = run_example("--fake")
    assert report["status"] == "done"
    cells = report["matrix"]["cells"]
    assert [cell["contestant"] for cell in cells] == [
        "openai/gpt-4.1-mini", "openai/gpt-4.1-mini@strict",
        "anthropic/claude-haiku-4-5", "anthropic/claude-haiku-4-5@strict",
    ]  # fmt: skip
    assert report["matrix"]["grid"] is True
    assert all(cell["priced"] and cell["scored"] for cell in cells)  # the real models' rows
    assert json.loads(capsys.readouterr().out)["matrix"] == report["matrix"]


def test_the_example_validates_with_no_warning(capsys):
    PriceTable.objects.ensure_default()
    try:
        call_command("validate", str(SUITE))
    except SystemExit as exited:
        assert exited.code == 0
    out, err = capsys.readouterr()
    assert "ok: " in out and "3 tasks, 6 cases" in out
    assert "warning" not in (out + err).lower()
