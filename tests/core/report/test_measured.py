"""What a run measured: win-rates when pairs were judged, else the scorecard, the matrix,
pass^k or the score, the highest first; one text for the card and the run lists."""

from __future__ import annotations

from evalsite.core.report.measured import measured
from evalsite.core.scoring.scorecard import Criterion
from tests.core.report.test_matrix import HAIKU, MINI, MINI_C, SCRIPTED, hand_counted
from tests.helpers.report import make_report


def test_a_matrix_run_leads_with_its_highest_score_and_whose_it_is():
    lead = measured(hand_counted())
    assert (lead.kind, lead.title, lead.lead) == ("matrix", "Matrix score", "1.000")
    assert lead.lead_of == f"{MINI_C}, {HAIKU}, {SCRIPTED}"
    assert [(row.name, row.figure) for row in lead.rows][:2] == [(MINI, "0.750"), (MINI_C, "1.000")]
    assert lead.rows[1].detail == "3/3 passed, 1 error left out"
    assert lead.text == f"Matrix score 1.000: {MINI_C}, {HAIKU}, {SCRIPTED} (highest of 5)"


def test_a_scorecard_run_leads_with_the_scorecards_weighted_score():
    lead = measured(hand_counted(scorecard=(Criterion("format", 1, "schema"),)))
    assert (lead.kind, lead.title) == ("scorecard", "Scorecard score")
    assert lead.basis == "the scorecard's weighted score"
    assert lead.text.startswith("Scorecard score 1.000: ")


def test_a_judged_run_measured_win_rates_and_says_uncalibrated_and_why():
    assert measured(make_report("eligible")).text.startswith("anthropic/claude-haiku-4-5 0.463")
    uncalibrated = measured(make_report("uncalibrated"))
    assert uncalibrated.win_rates and uncalibrated.lead == ""
    assert uncalibrated.text == "UNCALIBRATED: kappa 0.25 is below the floor 0.40"


def test_repeats_without_a_scored_matrix_lead_with_pass_k():
    lead = measured(make_report("no_judge"))
    assert (lead.kind, lead.title, lead.lead) == ("pass_k", "pass^2", "0.800")
    assert lead.rows[0].detail == "pass@2 0.950 over 20 cases"


def test_a_single_unjudged_contestant_measured_its_score():
    report = hand_counted()
    report = report | {"contestants": [MINI], "matrix": None, "frontier": None}
    report["per_contestant"] = {MINI: report["per_contestant"][MINI]}
    lead = measured(report)
    assert (lead.kind, lead.lead, lead.text) == ("score", "0.750", f"Score 0.750: {MINI}")
