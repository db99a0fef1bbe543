"""compare_reports: when two runs are comparable, the movers above the threshold largest
first, the figure changes, and regressions(points) for CI."""

from __future__ import annotations

import copy

import pytest

from evalsite.core.report.compare import Comparison, compare_reports
from tests.helpers.report import BASELINE, CANDIDATE, CONCISE, make_report


def _regressed(comparison: Comparison, points: float) -> list[tuple[str, str]]:
    return [
        (r.measure.measure, r.measure.subject)
        for r in comparison.regressions(points)
        if r.regressed
    ]


def later(**task_rates: tuple[float, float]) -> dict:
    """The fixture run again, with other per-task win-rates ({task: (candidate, concise)})."""
    report = make_report("uncalibrated", run_id="20261201T000000Z_b")
    for row in report["per_task"]:
        if row["task"] in task_rates:
            first, second = task_rates[row["task"]]
            row["win_rates"][CANDIDATE]["win_rate"] = first
            row["win_rates"][CONCISE]["win_rate"] = second
    return report


def test_a_run_is_comparable_with_itself_and_nothing_moved():
    report = make_report()
    comparison = compare_reports(report, report)
    assert comparison.comparable and comparison.reason == ""
    assert comparison.movers == ()
    assert [c.delta for c in comparison.win_rates] == [0.0, 0.0]
    assert _regressed(comparison, 0) == []


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"suite": {"name": "other", "hash": "ab" * 32}}, "different suites: support-desk vs other"),
        ({"baseline": CANDIDATE, "contestants": [CANDIDATE, BASELINE]},
         f"different baselines: {BASELINE} vs {CANDIDATE}"),
        ({"contestants": [BASELINE, "google/gemini-2.5-flash"]}, "no candidate in common"),
    ],
)  # fmt: skip
def test_runs_that_cannot_be_compared_say_why(change, reason):
    comparison = compare_reports(make_report(), make_report(**change))
    assert not comparison.comparable and comparison.reason == reason
    assert comparison.movers == () and comparison.win_rates == ()
    assert comparison.lines()[-1] == f"  not comparable: {reason}"
    assert _regressed(comparison, 0) == []


def test_a_changed_suite_file_is_comparable_with_a_note():
    b = make_report(suite={"name": "support-desk", "hash": "ab" * 32, "mover_threshold": 0.15})
    comparison = compare_reports(make_report(), b)
    assert comparison.comparable
    assert f"suite changed: hash {'5f' * 6} \u2192 {'ab' * 6}" in comparison.notes


def test_only_movers_at_or_above_the_threshold_are_listed_largest_first():
    a = make_report()  # refund-policy 0.35 / 0.55, triage 0.575 / 0.6
    b = later(**{"refund-policy": (0.5, 0.1), "triage": (0.6, 0.45)})
    movers = compare_reports(a, b).movers
    assert [(m.candidate, m.task, m.delta) for m in movers] == [
        (CONCISE, "refund-policy", -0.45),
        (CANDIDATE, "refund-policy", 0.15),  # exactly at the threshold counts
        (CONCISE, "triage", -0.15),
    ]
    assert compare_reports(a, b, threshold=0.2).movers == movers[:1]


def test_the_default_threshold_is_the_later_suites_then_015():
    a, b = make_report(), later(**{"triage": (0.775, 0.6)})  # +0.2
    assert compare_reports(a, b).threshold == 0.15
    b["suite"]["mover_threshold"] = 0.25
    assert compare_reports(a, b).threshold == 0.25 and compare_reports(a, b).movers == ()
    del b["suite"]["mover_threshold"]
    assert compare_reports(a, b).threshold == 0.15 and len(compare_reports(a, b).movers) == 1


def test_figure_changes_cover_win_rate_schema_checks_and_cost():
    b = copy.deepcopy(make_report())
    b["win_rates"][CANDIDATE]["win_rate"] = 0.3625
    b["per_contestant"][CONCISE]["schema"]["rate"] = 0.8
    b["per_contestant"][BASELINE]["checks"]["rate"] = 0.9
    b["per_contestant"][CANDIDATE]["cost"]["if_uncached_usd"] = 0.0035
    b["totals"]["cost_if_uncached_usd"] = 0.0668
    b["per_contestant"][CANDIDATE]["cost"]["usd"] = 0.0  # from the cache
    b["totals"]["cost_usd"] = 0.0
    comparison = compare_reports(make_report(), b)
    assert [(c.name, c.delta) for c in comparison.win_rates] == [(CANDIDATE, -0.1), (CONCISE, 0.0)]
    assert [c.name for c in comparison.schema_pass] == [BASELINE, CANDIDATE, CONCISE]
    assert comparison.schema_pass[2].delta == -0.1
    assert comparison.check_pass[0].delta == 0.05
    assert comparison.cost[1].delta == 0.001 and comparison.cost_total.delta == 0.001
    assert comparison.spend[1].delta == -0.0025 and comparison.spend_total.after == 0.0


def test_regression_names_candidates_that_fell_by_more_than_the_points():
    b = make_report()
    b["win_rates"][CANDIDATE]["win_rate"] = 0.3625  # -10 points
    b["win_rates"][CONCISE]["win_rate"] = 0.625  # +5 points
    comparison = compare_reports(make_report(), b)
    assert _regressed(comparison, 5) == [("win-rate", CANDIDATE)]
    assert _regressed(comparison, 10) == []  # fell by exactly 10, not more
    assert _regressed(comparison, 9.99) == [("win-rate", CANDIDATE)]


def test_every_measure_regresses_by_the_one_rule_and_cost_in_percent():
    b = copy.deepcopy(make_report())
    b["per_contestant"][CONCISE]["schema"]["rate"] = 0.8  # 0.900 -> 0.800: 10 points
    b["per_contestant"][BASELINE]["checks"]["rate"] = 0.79  # 0.850 -> 0.790: 6 points
    cost = b["per_contestant"][CANDIDATE]["cost"]
    cost["per_1k_calls_usd"] *= 1.08  # 8% more per answer, if uncached
    cost["usd"] = 0.0  # the spend never counts: a cached rerun is no cheaper
    comparison = compare_reports(make_report(), b)
    assert _regressed(comparison, 5) == [
        ("schema pass", CONCISE),
        ("check pass", BASELINE),
        ("cost per answer if uncached", CANDIDATE),
    ]
    assert _regressed(comparison, 8) == [("schema pass", CONCISE)]
    (rise,) = [r for r in comparison.regressions(5) if r.measure.subject == CANDIDATE
               and r.measure.is_cost]  # fmt: skip
    assert rise.text().endswith("up 8.0% (more than 5%)")


def test_to_dict_and_lines():
    b = later(**{"refund-policy": (0.55, 0.55)})
    b["totals"]["cost_if_uncached_usd"] = 0.07
    comparison = compare_reports(make_report(), b)
    data = comparison.to_dict()
    assert isinstance(comparison, Comparison)
    assert data["comparable"] is True and data["uncalibrated"] is True
    assert data["movers"] == [
        {"candidate": CANDIDATE, "task": "refund-policy", "before": 0.35, "after": 0.55,
         "delta": 0.2, "ci": None, "paired_n": 0, "p_value": None, "p_holm": None,
         "significant": None},
    ]  # fmt: skip
    assert data["significance"] is None  # these reports have no per-unit figures
    assert data["cost_total"] == {"name": "total", "before": 0.0658, "after": 0.07, "delta": 0.0042}
    assert comparison.lines() == [
        "compare 20261130T052720Z_51aa5390 \u2192 20261201T000000Z_b  (support-desk)",
        "  note: win-rates of A are UNCALIBRATED (below_floor)",
        "  note: win-rates of B are UNCALIBRATED (below_floor)",
        f"  {CANDIDATE} vs {BASELINE}: win-rate 0.463 \u2192 0.463 (+0.000) (UNCALIBRATED)",
        f"  {CONCISE} vs {BASELINE}: win-rate 0.575 \u2192 0.575 (+0.000) (UNCALIBRATED)",
        f"  schema pass {BASELINE}: 0.950 \u2192 0.950 (+0.000)",
        f"  schema pass {CANDIDATE}: 0.950 \u2192 0.950 (+0.000)",
        f"  schema pass {CONCISE}: 0.900 \u2192 0.900 (+0.000)",
        f"  check pass {BASELINE}: 0.850 \u2192 0.850 (+0.000)",
        f"  check pass {CANDIDATE}: 0.850 \u2192 0.850 (+0.000)",
        f"  check pass {CONCISE}: 0.850 \u2192 0.850 (+0.000)",
        f"  pass^2 {BASELINE}: 0.800 \u2192 0.800 (+0.000)",
        f"  pass^2 {CANDIDATE}: 0.800 \u2192 0.800 (+0.000)",
        f"  pass^2 {CONCISE}: 0.800 \u2192 0.800 (+0.000)",
        "  cost total: if uncached $0.0658 \u2192 $0.0700 (+$0.004200); "
        "spent $0.0658 \u2192 $0.0658",
        f"  cost {BASELINE}: if uncached $0.003000 \u2192 $0.003000 (+$0.0000); "
        "spent $0.003000 \u2192 $0.003000",
        f"  cost {CANDIDATE}: if uncached $0.002500 \u2192 $0.002500 (+$0.0000); "
        "spent $0.002500 \u2192 $0.002500",
        f"  cost {CONCISE}: if uncached $0.002500 \u2192 $0.002500 (+$0.0000); "
        "spent $0.002500 \u2192 $0.002500",
        "  paired significance: none (a report predates per-unit figures)",
        "  movers (per-task win-rate change of 0.150 or more):",
        f"    {CANDIDATE} / refund-policy: 0.350 \u2192 0.550 (+0.200) (UNCALIBRATED)",
    ]


def test_other_differences_are_noted():
    b = make_report(
        "eligible",
        judge={"model": "openai/gpt-4.1", "is_contestant": False},
        repeats=3,
        contestants=[BASELINE, CANDIDATE, "google/gemini-2.5-flash"],
    )
    notes = compare_reports(make_report("eligible"), b).notes
    assert notes == (
        "judge changed: anthropic/claude-sonnet-4-5 \u2192 openai/gpt-4.1",
        "repeats changed: 2 \u2192 3",
        f"only in A: {CONCISE}",
        "only in B: google/gemini-2.5-flash",
    )


def test_runs_without_a_judge_compare_without_win_rates():
    comparison = compare_reports(make_report("no_judge"), make_report("no_judge"))
    assert comparison.comparable and comparison.win_rates == () and comparison.movers == ()
    assert "  movers (per-task win-rate change of 0.150 or more): none" in comparison.lines()
