"""Per-tag pass rates per contestant (issue 16): report["per_tag"] holds one cell per
contestant, each flagged below the floor on its own; the report's warnings and their one
grouped line per contestant name the contestant; report.md and report.html show a tag ×
contestant table."""

from __future__ import annotations

from evalsite.core.calibration import Calibration
from evalsite.core.report import numbers as num
from evalsite.core.report import render_html, render_markdown
from evalsite.core.report.build import AnswerRow, ReportInput, build_report
from evalsite.core.report.card import group_warnings
from evalsite.core.report.summary import warning_lines

SLOPPY, GOOD = "scripted/sloppy", "scripted/good"


def _answers(contestant: str, passes: dict[str, list[bool]]) -> list[AnswerRow]:
    """One answer per pass/fail given, for the cases tagged with each tag."""
    rows = []
    for tag, outcomes in passes.items():
        for k, passed in enumerate(outcomes):
            rows.append(
                AnswerRow(
                    task="t",
                    case=f"{tag}-{k}",
                    contestant=contestant,
                    repeat=0,
                    status="done",
                    tags=(tag,),
                    schema_verdict="not_applicable",
                    passed=passed,
                )
            )
    return rows


def _report(**overrides) -> dict:
    answers = _answers(SLOPPY, {"billing": [True, False, False, True], "easy": [True] * 4})
    answers += _answers(
        GOOD, {"billing": [True, True, True, False], "easy": [True, True, False, False]}
    )
    data = ReportInput(
        run_id="r1",
        status="done",
        suite_name="s",
        suite_hash="0" * 64,
        contestants=(SLOPPY, GOOD),
        answers=answers,
        pairs=(),
        calibration=Calibration(),
        **overrides,
    )
    return build_report(data)


def test_per_tag_holds_each_contestants_own_rate_and_flag():
    rows = {row["tag"]: row for row in _report()["per_tag"]}

    assert list(rows) == ["billing", "easy"]
    assert rows["billing"]["contestants"] == {
        SLOPPY: {"n": 4, "passed": 2, "rate": 0.5, "flagged": True},
        GOOD: {"n": 4, "passed": 3, "rate": 0.75, "flagged": False},
    }
    assert rows["easy"]["contestants"] == {
        SLOPPY: {"n": 4, "passed": 4, "rate": 1.0, "flagged": False},
        GOOD: {"n": 4, "passed": 2, "rate": 0.5, "flagged": True},
    }


def test_a_contestant_with_no_answer_for_a_tag_has_an_empty_unflagged_cell():
    answers = _answers(SLOPPY, {"billing": [False]})
    data = ReportInput(
        run_id="r1", status="cancelled", suite_name="s", suite_hash="0" * 64,
        contestants=(SLOPPY, GOOD), answers=answers, pairs=(), calibration=Calibration(),
    )  # fmt: skip
    (row,) = build_report(data)["per_tag"]
    assert row["contestants"][GOOD] == {"n": 0, "passed": 0, "rate": None, "flagged": False}
    section = render_markdown(build_report(data)).split("## Per tag", 1)[1].split("\n## ")[0]
    assert f"| `billing` | 0.000 (n=1) FLAGGED | {num.MISSING} |" in section


def test_each_flagged_cell_is_a_warning_naming_its_contestant():
    warnings = _report()["warnings"]
    assert f"{SLOPPY}: tag billing: pass rate 0.500 is below 0.70" in warnings
    assert f"{GOOD}: tag easy: pass rate 0.500 is below 0.70" in warnings
    assert not any(w.startswith("tag ") for w in warnings)
    assert not any(w.startswith(f"{GOOD}: tag billing") for w in warnings)


def test_the_grouped_lines_are_one_per_contestant_in_contestant_order():
    report = _report()
    groups = [(g.title, g.items) for g in group_warnings(report)]
    assert groups[-2:] == [
        (f"{SLOPPY}: 1 tag pass below 0.70", ("billing 0.500",)),
        (f"{GOOD}: 1 tag pass below 0.70", ("easy 0.500",)),
    ]
    lines = warning_lines(report)
    assert f"    {SLOPPY}: 1 tag pass below 0.70: billing 0.500" in lines
    assert f"    {GOOD}: 1 tag pass below 0.70: easy 0.500" in lines
    assert not any("tag billing: pass rate" in line for line in lines)


def test_report_md_shows_a_tag_by_contestant_table_with_the_flags():
    markdown = render_markdown(_report())
    section = markdown.split("## Per tag", 1)[1].split("\n## ", 1)[0]
    head = next(line for line in section.splitlines() if line.startswith("| tag"))
    assert f"`{SLOPPY}` pass rate" in head and f"`{GOOD}` pass rate" in head
    billing = next(line for line in section.splitlines() if line.startswith("| `billing`"))
    cells = [cell.strip() for cell in billing.strip("|").split("|")]
    assert cells[1:3] == ["0.500 (n=4) FLAGGED", "0.750 (n=4)"]


def test_report_html_shows_the_same_table():
    html = render_html(_report())
    section = html.split('id="per-tag"', 1)[1].split("</section>", 1)[0]
    assert "<code>scripted/good</code> pass rate" in section
    assert "0.500 (n=4) FLAGGED" in section and "0.750 (n=4)" in section
