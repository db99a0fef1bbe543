"""The `evalsite run` summary lines (SPEC §13), compared with the literal text."""

from __future__ import annotations

from evalsite.core.report.summary import summary_lines
from tests.helpers.report import CANDIDATE, CONCISE, make_report

HEAD = [
    "run 20261130T052720Z_51aa5390  (support-desk)",
    "  report: .evalsite/reports/support-desk/20261130T052720Z_51aa5390/report.md",
]
COST = "  cost: $0.0658 this run (answers $0.0080, judge $0.0578); if uncached $0.0658"


def test_an_uncalibrated_run_prints_the_spec_shape():
    assert summary_lines(make_report("uncalibrated")) == [
        *HEAD,
        "  calibration: below_floor - kappa 0.25 (fair) over 12 labels - headline eligible: false",
        "  anthropic/claude-haiku-4-5 vs openai/gpt-4o-mini: win-rate 0.463 (UNCALIBRATED) "
        "[0.325, 0.613] over schema-passing pairs only, n=20 - flips 3 - excluded 0",
        "  openai/gpt-4o-mini@concise vs openai/gpt-4o-mini: win-rate 0.575 (UNCALIBRATED) "
        "[0.400, 0.750] over schema-passing pairs only, n=20 - flips 7 - excluded 2"
        " - flip rate 0.350 measures order, not quality",
        COST,
    ]


def test_an_eligible_run_drops_the_uncalibrated_flag():
    lines = summary_lines(make_report("eligible"))
    assert lines[2] == (
        "  calibration: ok - kappa 0.62 (substantial) over 40 labels - headline eligible: true"
    )
    assert lines[3] == (
        "  anthropic/claude-haiku-4-5 vs openai/gpt-4o-mini: win-rate 0.463 [0.325, 0.613] "
        "over schema-passing pairs only, n=20 - flips 3 - excluded 0"
    )
    assert not any("UNCALIBRATED" in line for line in lines)


def test_undefined_kappa_and_no_labels_say_so():
    undefined = summary_lines(make_report("kappa_undefined"))[2]
    assert undefined == (
        "  calibration: kappa_undefined - kappa undefined over 12 labels - headline eligible: false"
    )
    no_labels = summary_lines(make_report("no_labels"))[2]
    assert no_labels == "  calibration: no_labels - no labels - headline eligible: false"


def test_a_small_n_has_no_interval():
    report = make_report("uncalibrated")
    reason = "too few cases: 2; an interval needs 8"
    report["win_rates"][CANDIDATE] |= {
        "n": 5, "cases": 2, "ci": None, "win_rate": 0.6, "no_interval": reason
    }  # fmt: skip
    line = summary_lines(report)[3]
    assert line == (
        "  anthropic/claude-haiku-4-5 vs openai/gpt-4o-mini: win-rate 0.600 (UNCALIBRATED) "
        "no interval (too few cases: 2; an interval needs 8) over schema-passing pairs only, "
        "n=2 cases (5 pairs) - flips 3 - excluded 0"
    )


def test_no_judge_prints_no_win_rates():
    lines = summary_lines(make_report("no_judge"))
    assert lines[3] == "  no judge: no win-rates"
    assert not any(" vs " in line for line in lines)
    assert len(lines) == 5


def test_a_fake_run_says_its_cost_is_simulated():
    report = make_report()
    report["totals"] |= {"simulated": True}
    assert summary_lines(report)[-1] == COST + " (simulated: fake provider)"


def test_a_run_that_is_not_done_prints_its_status_and_detail():
    report = make_report(status="failed", detail="spend cap $1.00 reached")
    lines = summary_lines(report)
    assert lines[:2] == [HEAD[0], "  status: failed - spend cap $1.00 reached"]
    assert lines[2] == HEAD[1]


def test_names_cannot_reach_the_terminal_as_escape_codes():
    report = make_report()
    report["win_rates"][CONCISE]["vs"] = "\x1b[2J\x1b[31mbase\u202eline\nforged line"
    line = summary_lines(report)[4]
    assert "\x1b" not in line and "\u202e" not in line and "\n" not in line
    assert "\\x1b[2J\\x1b[31mbase\\u202eline forged line" in line


def test_a_run_of_one_contestant_has_nothing_to_flag_uncalibrated():
    from evalsite.core.report.document import Context
    from evalsite.core.report.overview import win_rates_section

    report = make_report(contestants=["scripted/evalpin"], baseline="scripted/evalpin")
    section = win_rates_section(Context.of(report))
    assert section.title == "Win-rates"
    assert "One contestant: no pairs, so no win-rates" in section.blocks[0].text
    lines = summary_lines(report)
    assert lines[2] == "  one contestant: no pairs, no win-rates (checks and pass rates only)"
    assert not any("UNCALIBRATED" in line or "calibration:" in line for line in lines)
