"""Charts that read: no text runs off the chart however long a model's name, ticks fall on
round values (whole label counts, money like $0.0005 rather than $0.000500000), and cost is
plotted as it would be without the cache, so a cached rerun does not sit at $0."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from evalsite.core.report.card import group_warnings
from evalsite.core.report.charts import cost_vs_winrate_svg, kappa_curve_svg
from tests.helpers.report import BASELINE, CANDIDATE, CONCISE, make_report

NS = "{http://www.w3.org/2000/svg}"
CHAR_PX = 7  # at most, at 12 px sans-serif (the charts' own budget)
LONG = "anthropic/claude-haiku-4-5-20251001-with-a-very-long-deployment-name@verbose-variant"


def _texts(svg: str) -> tuple[ET.Element, list[ET.Element]]:
    root = ET.fromstring(svg)  # noqa: S314 - our own output, the thing under test
    return root, list(root.iter(f"{NS}text"))


def _extent(element: ET.Element) -> tuple[float, float]:
    """The left and right edges a text element can reach, at CHAR_PX a character."""
    x, width = float(element.get("x")), len(element.text or "") * CHAR_PX
    anchor = element.get("text-anchor")
    if anchor == "middle":
        return x - width / 2, x + width / 2
    if anchor == "end":
        return x - width, x
    return x, x + width


def _renamed(report: dict, old: str, new: str) -> dict:
    report["contestants"] = [new if c == old else c for c in report["contestants"]]
    for key in ("win_rates", "per_contestant"):
        report[key] = {new if k == old else k: v for k, v in report[key].items()}
    if report.get("baseline") == old:
        report["baseline"] = new
    return report


@pytest.mark.parametrize("name", [CANDIDATE, LONG])
@pytest.mark.parametrize("where", ["baseline", "candidate"])
def test_no_text_of_the_cost_chart_runs_off_it_and_every_name_is_whole(name, where):
    old = BASELINE if where == "baseline" else CANDIDATE
    report = _renamed(make_report("eligible"), old, name)
    root, texts = _texts(cost_vs_winrate_svg(report))
    width = float(root.get("width"))
    height = float(root.get("height"))

    for element in texts:
        if element.get("transform"):
            continue  # the rotated y-axis title
        left, right = _extent(element)
        assert left >= 0 and right <= width, (element.text, left, right, width)
        assert float(element.get("y")) <= height, element.text
        assert "\u2026" not in (element.text or ""), element.text  # nothing cut short
    legend = "".join(element.text or "" for element in texts)
    assert name in legend


def test_each_point_is_numbered_and_the_legend_names_it_with_its_figures():
    _, texts = _texts(cost_vs_winrate_svg(make_report("uncalibrated")))
    lines = [element.text for element in texts]

    assert f"1  {CANDIDATE}" in lines and f"2  {CONCISE}" in lines
    assert (
        "win-rate 0.463\u2020 [0.325, 0.613] \u00b7 $0.0025 if uncached \u00b7 $0.0025 this run"
        in lines
    )
    assert f"baseline {BASELINE} (win-rate 0.5)" in lines


def test_money_ticks_are_round_and_short():
    report = make_report("eligible")
    for name in (CANDIDATE, CONCISE):
        report["per_contestant"][name]["cost"] |= {"usd": 0.0013, "if_uncached_usd": 0.0013}
    root, texts = _texts(cost_vs_winrate_svg(report))
    ticks = [e.text for e in texts if (e.text or "").startswith("$")]

    assert ticks == ["$0.0000", "$0.0005", "$0.0010", "$0.0015"]
    assert "$0.0013 if uncached" in "".join(e.text or "" for e in texts)


@pytest.mark.parametrize(
    ("top", "expected"), [(3, "0 1 2 3"), (12, "0 5 10 15"), (40, "0 10 20 30 40")]
)
def test_the_kappa_curve_counts_labels_in_whole_numbers(top, expected):
    report = make_report("uncalibrated")
    report["calibration"]["curve"] = [
        {"n": n, "kappa": 0.1 * n / top, "ci": None} for n in range(1, top + 1)
    ]
    _, texts = _texts(kappa_curve_svg(report))
    x_ticks = [
        e.text
        for e in texts
        if e.get("text-anchor") == "middle" and not e.get("transform") and e.text != "labels (n)"
    ]

    assert " ".join(x_ticks) == expected


def test_a_cached_rerun_is_plotted_at_what_it_would_cost_uncached():
    report = make_report("eligible")
    for name in (CANDIDATE, CONCISE):
        report["per_contestant"][name]["cost"] |= {"usd": 0.0, "if_uncached_usd": 0.004}
    root, texts = _texts(cost_vs_winrate_svg(report))
    lines = [e.text or "" for e in texts]
    origin_x = min(float(c.get("cx")) for c in root.iter(f"{NS}circle"))

    assert "Cost if uncached" in root[0].text
    assert "cost if uncached of the candidate's answers (USD)" in lines
    assert origin_x > 400  # at $0.004 on an axis to $0.004 or so, not at the $0 origin
    assert any(line.endswith("$0.0040 if uncached \u00b7 $0 this run") for line in lines)


def test_tag_warnings_group_into_one_line_and_others_keep_their_order():
    report = {
        "warnings": [
            "win-rates are UNCALIBRATED: no labels",
            "b/m: tag billing: pass rate 0.600 is below 0.70",
            "simulated run (fake provider): answers, verdicts and costs are not real",
            "b/m: tag api: pass rate 0.000 is below 0.70",
        ],
        "contestants": ["a/m", "b/m"],
        "per_tag": [
            {"tag": "billing", "contestants": {"a/m": _cell(5, 5), "b/m": _cell(5, 3)}},
            {"tag": "routing", "contestants": {"a/m": _cell(5, 5), "b/m": _cell(5, 5)}},
            {"tag": "api", "contestants": {"a/m": _cell(4, 4), "b/m": _cell(4, 0)}},
        ],
    }
    assert [(g.title, g.items) for g in group_warnings(report)] == [
        ("win-rates are UNCALIBRATED: no labels", ()),
        ("simulated run (fake provider): answers, verdicts and costs are not real", ()),
        ("b/m: 2 tags pass below 0.70", ("billing 0.600", "api 0.000")),
    ]


def _cell(n: int, passed: int) -> dict:
    return {"n": n, "passed": passed, "rate": passed / n, "flagged": passed / n < 0.7}


@pytest.mark.parametrize("variant", ["no_labels", "no_judge"])
def test_without_labels_the_charts_section_says_so_instead_of_two_empty_plots(variant):
    from evalsite.core.report.html import render_html
    from evalsite.core.report.markdown import render_markdown

    html, markdown = render_html(make_report(variant)), render_markdown(make_report(variant))

    for text, heading in ((html, 'id="charts"'), (markdown, "## Charts")):
        charts = text.split(heading, 1)[1]
        assert "No labels yet: the kappa curve and the confusion matrix are drawn" in charts
        assert "Confusion matrix" not in charts
        assert "kappa as labels were added" not in charts


def test_with_labels_the_charts_section_draws_the_kappa_curve_and_the_matrix():
    from evalsite.core.report.html import render_html

    charts = render_html(make_report("uncalibrated")).split('id="charts"', 1)[1]

    assert "Confusion matrix" in charts and "kappa as labels were added" in charts
    assert "No labels yet: the kappa curve" not in charts
