"""The inline SVG charts: well-formed, titled, deterministic, and a "no data" SVG when the
report lacks what a chart draws."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from evalsite.core.report.charts import confusion_svg, cost_vs_winrate_svg, kappa_curve_svg
from tests.helpers.report import CANDIDATE, CONCISE, VARIANTS, make_report

NS = "{http://www.w3.org/2000/svg}"
CHARTS = (cost_vs_winrate_svg, kappa_curve_svg, confusion_svg)


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # noqa: S314 - our own output, the thing under test
    assert root.tag == f"{NS}svg" and root.get("role") == "img" and root.get("viewBox")
    assert root[0].tag == f"{NS}title" and root[0].text
    return root


def texts(root: ET.Element) -> list[str]:
    return [e.text or "" for e in root.iter(f"{NS}text")]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("chart", CHARTS)
def test_every_chart_is_well_formed_and_deterministic(chart, variant):
    svg = chart(make_report(variant))
    parse(svg)
    assert chart(make_report(variant)) == svg


def test_cost_against_win_rate_has_a_point_and_a_bar_per_candidate():
    root = parse(cost_vs_winrate_svg(make_report("eligible")))
    assert len(list(root.iter(f"{NS}circle"))) == 2
    labels = texts(root)
    assert f"1  {CANDIDATE}" in labels and "1" in labels  # the legend names point 1
    assert any(label.startswith("win-rate 0.463 [0.325, 0.613]") for label in labels)
    assert "baseline openai/gpt-4o-mini (win-rate 0.5)" in labels
    assert "cost if uncached of the candidate's answers (USD)" in labels and "win-rate" in labels
    # the interval bar plus two caps per candidate, the dashed baseline line at 0.5 (and
    # its sample in the legend)
    dashed = [e for e in root.iter(f"{NS}line") if e.get("stroke-dasharray")]
    assert len(dashed) == 2 and dashed[0].get("y1") == dashed[0].get("y2") == "160.0"


def test_labels_of_points_in_the_same_place_do_not_overlap():
    report = make_report("eligible")
    report["win_rates"][CONCISE]["win_rate"] = report["win_rates"][CANDIDATE]["win_rate"]
    root = parse(cost_vs_winrate_svg(report))
    marks = [e for e in root.iter(f"{NS}text") if e.text in ("1", "2")]
    assert len(marks) == 2 and len({e.get("y") for e in marks}) == 2


def test_uncalibrated_win_rates_are_flagged_in_the_chart():
    root = parse(cost_vs_winrate_svg(make_report("uncalibrated")))
    assert "UNCALIBRATED" in root[0].text
    assert any(text.startswith("win-rate 0.463\u2020") for text in texts(root))
    assert "win-rate (UNCALIBRATED)" in texts(root)


def test_the_kappa_curve_draws_the_band_and_the_floor():
    root = parse(kappa_curve_svg(make_report("uncalibrated")))
    assert len(list(root.iter(f"{NS}polygon"))) == 1
    assert len(list(root.iter(f"{NS}polyline"))) == 1
    assert len(list(root.iter(f"{NS}circle"))) == 3  # the first point has no kappa yet
    assert "floor 0.40" in texts(root) and "labels (n)" in texts(root)


def test_the_confusion_heat_map_has_nine_cells_with_their_counts():
    root = parse(confusion_svg(make_report("eligible")))
    cells = list(root.iter(f"{NS}rect"))
    assert len(cells) == 9
    assert [t for t in texts(root) if t.isdigit()] == [
        "12",
        "2",
        "1",
        "3",
        "14",
        "1",
        "1",
        "1",
        "5",
    ]
    darkest = max(cells, key=lambda cell: float(cell.get("fill-opacity")))
    assert darkest.get("fill-opacity") == "0.88"
    assert "human \u2193" in texts(root) and "judge \u2192" in texts(root)


@pytest.mark.parametrize(
    ("chart", "variant"),
    [
        (cost_vs_winrate_svg, "no_judge"),
        (kappa_curve_svg, "no_labels"),
        (confusion_svg, "no_labels"),
    ],
)
def test_missing_data_gives_a_small_no_data_svg(chart, variant):
    root = parse(chart(make_report(variant)))
    assert any("no data" in text for text in texts(root))
    assert root.get("height") == "48"


def test_a_chart_survives_missing_and_odd_numbers():
    report = make_report()
    report["win_rates"][CANDIDATE] |= {"ci": [float("nan"), 0.5]}
    report["per_contestant"] = {}
    report["calibration"] |= {"confusion": [[1, 2]], "curve": [{"n": 3, "kappa": float("inf")}]}
    assert parse(cost_vs_winrate_svg(report)) is not None
    assert "no data" in confusion_svg(report) and "no data" in kappa_curve_svg(report)
