"""Per-tag pass rates per contestant (issue 16): report["per_tag"] holds one cell per
contestant, each flagged below the floor on its own; the report's warnings and their one
grouped line per contestant name the contestant; report.md and report.html show a tag ×
contestant table."""

from __future__ import annotations

from evalsite.core.calibration import Calibration
from evalsite.core.report import numbers as num
from evalsite.core.report.build import AnswerRow, ReportInput, build_report
from evalsite.core.report.card import group_warnings
from evalsite.core.report.html import render_html
from evalsite.core.report.markdown import render_markdown
from evalsite.core.report.summary import warning_lines

SLOPPY, GOOD = "scripted/sloppy", "scripted/good"


def _answers(contestant: str, passes: dict[str, list[bool]], repeats: int = 1) -> list[AnswerRow]:
    """One answer per pass/fail given, for the cases tagged with each tag, copied into
    ``repeats`` repeats of its case."""
    rows = []
    for tag, outcomes in passes.items():
        for k, passed in enumerate(outcomes):
            for repeat in range(repeats):
                rows.append(
                    AnswerRow(
                        task="t",
                        case=f"{tag}-{k}",
                        contestant=contestant,
                        repeat=repeat,
                        status="done",
                        tags=(tag,),
                        schema_verdict="not_applicable",
                        passed=passed,
                    )
                )
    return rows


def _of(passed: int, n: int) -> list[bool]:
    return [True] * passed + [False] * (n - passed)


def _report(**overrides) -> dict:
    answers = _answers(SLOPPY, {"billing": _of(2, 12), "easy": _of(12, 12)})
    answers += _answers(GOOD, {"billing": _of(10, 12), "easy": _of(3, 12)})
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


def _cell(cell: dict) -> tuple:
    return cell["n"], cell["passed"], cell["rate"], cell["cases"], cell["flagged"]


def test_per_tag_holds_each_contestants_own_rate_and_flag():
    report = _report()
    rows = {row["tag"]: row for row in report["per_tag"]}

    assert list(rows) == ["billing", "easy"]
    billing, easy = rows["billing"]["contestants"], rows["easy"]["contestants"]
    assert _cell(billing[SLOPPY]) == (12, 2, round(2 / 12, 6), 12, True)  # report: 6 places
    assert _cell(billing[GOOD]) == (12, 10, round(10 / 12, 6), 12, False)
    assert _cell(easy[SLOPPY]) == (12, 12, 1.0, 12, False)
    assert _cell(easy[GOOD]) == (12, 3, 0.25, 12, True)
    assert easy[SLOPPY]["ci"] is None and easy[SLOPPY]["no_interval"] == "every answer passed"
    assert billing[SLOPPY]["ci"][1] < 0.7 and billing[SLOPPY]["method"] == "bca"
    assert report["per_tag_comparisons"] == 4


def test_a_contestant_with_no_answer_for_a_tag_has_an_empty_unflagged_cell():
    answers = _answers(SLOPPY, {"billing": [False]})
    data = ReportInput(
        run_id="r1", status="cancelled", suite_name="s", suite_hash="0" * 64,
        contestants=(SLOPPY, GOOD), answers=answers, pairs=(), calibration=Calibration(),
    )  # fmt: skip
    (row,) = build_report(data)["per_tag"]
    assert row["contestants"][GOOD] == {"n": 0, "passed": 0, "rate": None, "flagged": False}
    assert row["contestants"][SLOPPY]["flagged"] is False  # one case: nothing is shown
    section = render_markdown(build_report(data)).split("## Per tag", 1)[1].split("\n## ")[0]
    assert (
        f"| `billing` | 0.000 (n=1 case) under the floor, too few cases to test | {num.MISSING} |"
    ) in section


def test_each_flagged_cell_is_a_warning_naming_its_contestant():
    warnings = _report()["warnings"]
    assert any(w.startswith(f"{SLOPPY}: tag billing: pass rate 0.167 is below 0.70 (Holm p=")
               for w in warnings)  # fmt: skip
    assert any(w.startswith(f"{GOOD}: tag easy: pass rate 0.250 is below 0.70 (Holm p=")
               for w in warnings)  # fmt: skip
    assert not any(w.startswith("tag ") for w in warnings)
    assert not any(w.startswith(f"{GOOD}: tag billing") for w in warnings)


def test_the_grouped_lines_are_one_per_contestant_in_contestant_order():
    report = _report()
    groups = [(g.title, g.items) for g in group_warnings(report)]
    assert groups[-2:] == [
        (f"{SLOPPY}: 1 tag pass below 0.70", ("billing 0.167",)),
        (f"{GOOD}: 1 tag pass below 0.70", ("easy 0.250",)),
    ]
    lines = warning_lines(report)
    assert f"    {SLOPPY}: 1 tag pass below 0.70: billing 0.167" in lines
    assert f"    {GOOD}: 1 tag pass below 0.70: easy 0.250" in lines
    assert not any("tag billing: pass rate" in line for line in lines)


def test_report_md_shows_a_tag_by_contestant_table_with_the_flags():
    markdown = render_markdown(_report())
    section = markdown.split("## Per tag", 1)[1].split("\n## ", 1)[0]
    assert "below the tag floor of 0.70 (4 comparisons, Holm-corrected)" in section
    head = next(line for line in section.splitlines() if line.startswith("| tag"))
    assert f"`{SLOPPY}` pass rate" in head and f"`{GOOD}` pass rate" in head
    billing = next(line for line in section.splitlines() if line.startswith("| `billing`"))
    cells = [cell.strip() for cell in billing.strip("|").split("|")]
    assert cells[1].startswith("0.167 [") and "few cases (n=12 cases) FLAGGED, Holm p=" in cells[1]
    assert cells[2].startswith("0.833 [") and cells[2].endswith("few cases (n=12 cases)")


def test_copying_verdicts_into_more_repeats_never_flags_a_tag():
    """10 cases with 5 passed: under the floor (0.50), not significant over 10 cases. The
    same verdicts copied into 4 repeats are still 10 cases, and still not flagged."""

    def cell(repeats: int) -> dict:
        data = ReportInput(
            run_id="r1", status="done", suite_name="s", suite_hash="0" * 64,
            contestants=(SLOPPY,), answers=_answers(SLOPPY, {"t": _of(5, 10)}, repeats),
            pairs=(), calibration=Calibration(), repeats=repeats,
        )  # fmt: skip
        return build_report(data)["per_tag"][0]["contestants"][SLOPPY]

    once, copied = cell(1), cell(4)
    assert once["below"] and not once["flagged"]
    assert (copied["n"], copied["cases"]) == (40, 10)
    assert copied["flagged"] is False and copied["ci"] == once["ci"]
    assert copied["p_value"] == once["p_value"] > 0.025


def test_a_tag_below_the_floor_alone_is_not_flagged_after_holm_over_many_tags():
    """One tag at 5 of 14 (p=0.010 alone, its interval below the floor) among nine tags
    that pass: after Holm over the ten cells it is under the floor but not flagged, and
    says so."""
    passes = {"low": _of(5, 14)} | {f"ok{i}": _of(14, 14 + i % 2) for i in range(9)}
    data = ReportInput(
        run_id="r1", status="done", suite_name="s", suite_hash="0" * 64,
        contestants=(SLOPPY,), answers=_answers(SLOPPY, passes), pairs=(),
        calibration=Calibration(),
    )  # fmt: skip
    report = build_report(data)
    low = next(row for row in report["per_tag"] if row["tag"] == "low")["contestants"][SLOPPY]
    assert report["per_tag_comparisons"] == 10
    assert low["p_value"] < 0.025 < low["p_holm"] and low["flagged"] is False
    assert low["ci"][1] < 0.7  # alone, it would be below the floor
    section = render_markdown(report).split("## Per tag", 1)[1]
    line = next(line for line in section.splitlines() if line.startswith("| `low`"))
    assert "under the floor, not significant after Holm" in line
    assert not any("tag low" in warning for warning in report["warnings"])


def test_report_html_shows_the_same_table():
    html = render_html(_report())
    section = html.split('id="per-tag"', 1)[1].split("</section>", 1)[0]
    assert "<code>scripted/good</code> pass rate" in section
    assert "FLAGGED, Holm p=" in section and "0.833 [" in section
