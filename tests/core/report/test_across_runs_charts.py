"""The suite's across-runs charts and the run's cost chart: unpriced contestants are left
out and said so, never drawn at $0; each run's points carry its win-rates (with their
intervals) or its scores; the charts are well formed, titled and deterministic."""

from __future__ import annotations

from evalsite.core.report.across import (
    SCORE,
    WIN_RATE,
    cost_quality_svg,
    run_points,
    runs_over_time_svg,
    unplotted,
)
from evalsite.core.report.charts import cost_vs_winrate_svg
from evalsite.core.report.matrix import matrix_report
from tests.core.report.test_charts import NS, parse, texts
from tests.helpers.report import CANDIDATE, CONCISE, make_report


def _unpriced(report: dict, *names: str) -> dict:
    return report | matrix_report(report, unpriced=names)


def _scored() -> dict:
    """A run without judging, its contestants scored by a scorecard."""
    report = make_report("no_judge")
    cells = {name: {"score": 0.8, "passed": 8, "scored": 10} for name in report["contestants"]}
    return report | {"scorecard": {"cells": cells, "criteria": [{"name": "correct"}]}}


def _circles(svg: str) -> int:
    return len(list(parse(svg).iter(f"{NS}circle")))


def test_the_run_cost_chart_leaves_an_unpriced_candidate_out_and_says_so():
    report = make_report("eligible")
    svg = cost_vs_winrate_svg(_unpriced(report, CANDIDATE))
    assert _circles(svg) == _circles(cost_vs_winrate_svg(report)) - 1
    assert any("1 candidate unpriced, not plotted" in t for t in texts(parse(svg)))


def test_the_run_cost_chart_with_every_candidate_unpriced_draws_none():
    svg = cost_vs_winrate_svg(_unpriced(make_report("eligible"), CANDIDATE, CONCISE))
    assert _circles(svg) == 0 and "no data (all unpriced, not plotted)" in svg


def test_a_judged_run_gives_its_candidates_win_rates_with_intervals():
    points = run_points("first", "2026-12-01 09:00", make_report("eligible"))
    assert {p.contestant for p in points} == {CANDIDATE, CONCISE}
    assert all(p.measure == WIN_RATE and p.ci is not None for p in points)
    assert all(p.cost_usd is not None and p.cost_usd > 0 for p in points)


def test_a_run_without_judging_gives_each_contestants_score():
    points = run_points("plain", "2026-12-01 09:00", _scored())
    assert len(points) == 3 and all(p.measure == SCORE and p.value == 0.8 for p in points)


def test_the_runs_over_time_chart_draws_a_point_per_contestant_and_run_with_the_run_names():
    points = [
        *run_points("first", "2026-12-01 09:00", make_report("eligible")),
        *run_points("second", "2026-12-02 09:00", make_report("eligible")),
    ]
    svg = runs_over_time_svg(points)
    labels = texts(parse(svg))
    assert _circles(svg) == 4 + 2  # four points, two legend swatches
    cost = points[0].run_cost_usd
    assert cost is not None and cost > 0 and points[-1].run_cost_usd == cost
    assert any(t.startswith("1  first · 2026-12-01 09:00 · $") for t in labels)
    assert any(t.startswith("2  second · 2026-12-02 09:00 · $") for t in labels)
    assert len(list(parse(svg).iter(f"{NS}rect"))) == 2  # each run's cost, a bar
    assert runs_over_time_svg(points) == svg


def test_an_unpriced_run_has_no_cost_bar_and_is_said_not_plotted():
    report = _unpriced(make_report("eligible"), CANDIDATE)
    points = [
        *run_points("first", "2026-12-01 09:00", make_report("eligible")),
        *run_points("second", "2026-12-02 09:00", report),
    ]
    root = parse(runs_over_time_svg(points))
    labels = texts(root)
    assert len(list(root.iter(f"{NS}rect"))) == 1 and "unpriced" in labels
    assert "2  second · 2026-12-02 09:00 · unpriced" in labels
    assert "1 run unpriced, not plotted on the run cost" in labels
    assert not any("points unpriced" in t for t in labels)  # the scatter's note, not this one


def test_the_cost_quality_scatter_leaves_unpriced_points_out_and_says_so():
    priced = run_points("first", "2026-12-01 09:00", make_report("eligible"))
    unpriced = run_points(
        "second", "2026-12-02 09:00", _unpriced(make_report("eligible"), CANDIDATE, CONCISE)
    )
    points = priced + unpriced
    assert unplotted(points) == [
        "1 run unpriced, not plotted on the run cost",
        "2 points unpriced, not plotted on the cost axis",
    ]
    svg = cost_quality_svg(points)
    assert _circles(svg) == 2 + 2  # the two priced points, two legend swatches
    assert "2 points unpriced, not plotted on the cost axis" in texts(parse(svg))
    assert "$0 " not in svg and not any(t.endswith("at unpriced") for t in texts(parse(svg)))


def test_runs_that_measured_another_figure_are_left_out_and_said():
    points = [
        *run_points("judged", "2026-12-01 09:00", make_report("eligible")),
        *run_points("plain", "2026-12-02 09:00", _scored()),
    ]
    notes = unplotted(points)
    assert notes and "measured another figure than the newest run's score" in notes[0]
    assert "run's runs over time: score" not in runs_over_time_svg(points)
    parse(runs_over_time_svg(points))


def test_a_scatter_of_unpriced_points_only_says_so():
    report = _unpriced(make_report("eligible"), CANDIDATE, CONCISE)
    svg = cost_quality_svg(run_points("only", "2026-12-01 09:00", report))
    assert _circles(svg) == 0 and "no data (all unpriced, not plotted)" in svg


def test_no_points_is_a_no_data_chart():
    for chart in (runs_over_time_svg, cost_quality_svg):
        assert "no data" in chart([])
        parse(chart([]))
