"""report.md and report.html: the sections of SPEC §11 in order, the UNCALIBRATED flag and
daggers exactly when the win-rates are not headline-eligible, n beside every schema-pass
rate, and every variant of a report rendering."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from evalsite.core.report.html import render_html
from evalsite.core.report.markdown import render_markdown
from tests.helpers.report import CONCISE, VARIANTS, make_report

SECTIONS = [
    "Run", "Calibration", "Win-rates", "Matrix", "Scorecard", "Per task", "Per tag", "What changed",
    "Gates", "Failures and exclusions", "Warnings", "Charts", "Reproduce", "Decision",
]  # fmt: skip


class _Headings(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.h2: list[str] = []
        self._in_h2 = False

    def handle_starttag(self, tag, attrs):
        if tag == "h2":
            self._in_h2 = True
            self.h2.append("")

    def handle_endtag(self, tag):
        self._in_h2 = self._in_h2 and tag != "h2"

    def handle_data(self, data):
        if self._in_h2:
            self.h2[-1] += data


def md_sections(markdown: str) -> list[str]:
    return [line[3:] for line in markdown.splitlines() if line.startswith("## ")]


def html_sections(page: str) -> list[str]:
    parser = _Headings()
    parser.feed(page)
    return parser.h2


def _plain(title: str) -> str:
    return title.removesuffix(" \u2014 UNCALIBRATED")


@pytest.mark.parametrize("variant", VARIANTS)
def test_both_files_have_the_sections_in_spec_order(variant):
    report = make_report(variant)
    assert [_plain(t) for t in md_sections(render_markdown(report))] == SECTIONS
    assert [_plain(t) for t in html_sections(render_html(report))] == SECTIONS


@pytest.mark.parametrize("variant", ["uncalibrated", "kappa_undefined", "no_labels"])
def test_uncalibrated_win_rates_are_titled_and_daggered(variant):
    report = make_report(variant)
    markdown, page = render_markdown(report), render_html(report)
    assert "Win-rates \u2014 UNCALIBRATED" in md_sections(markdown)
    assert "Win-rates \u2014 UNCALIBRATED" in html_sections(page)
    for text in (markdown, page):
        assert "0.463\u2020" in text and "0.575\u2020" in text  # the win-rates table
        assert "0.350\u2020 (n=10, flips 1)" in text  # per task
        assert "0.400\u2020 (n=8)" in text  # per tag
        assert "0.600\u2020" in text  # movers
        assert "\u2020 UNCALIBRATED: calibration" in text
        assert "win-rate 0.463\u2020 (UNCALIBRATED) [0.325, 0.613] (n=20)" in text


def test_eligible_win_rates_carry_no_dagger_and_no_flag():
    report = make_report("eligible")
    for text in (render_markdown(report), render_html(report)):
        assert "\u2020" not in text
        assert "UNCALIBRATED" not in text.replace("(UNVERIFIED)", "")
        assert "| 0.463 |" in text or '<td class="fig">0.463</td>' in text


def test_every_schema_pass_rate_has_its_n_beside_it():
    report = make_report()
    markdown = render_markdown(report)
    assert "| 0.950 (n=40) |" in markdown  # win-rates table and scorecard
    assert "| 0.900 (n=40) |" in markdown
    win_rate_rows = [line for line in markdown.splitlines() if line.startswith("| `anthropic")]
    assert re.search(r"\| \d\.\d{3} \(n=\d+\) \|$", win_rate_rows[0])
    scorecard = next(line for line in markdown.splitlines() if line.startswith("| schema pass |"))
    assert scorecard.count("(n=40)") == 3
    assert '<td class="fig">0.950 (n=40)</td>' in render_html(report)


def test_a_high_flip_rate_is_marked_in_the_table():
    report = make_report()
    for text in (render_markdown(report), render_html(report)):
        assert "0.350 \u2014 measures order, not quality" in text
        assert "this win-rate measures order, not quality" in text


def test_no_judge_says_there_are_no_win_rates():
    report = make_report("no_judge")
    markdown = render_markdown(report)
    assert "No judge in this run: no win-rates." in markdown
    assert "- Judge: none: no judge calls, no win-rates" in markdown
    assert "Evidence: calibration no_labels; no judge: no win-rates" in markdown
    assert "No judge in this run: no win-rates." in render_html(report)


def test_no_labels_renders_without_kappa():
    report = make_report("no_labels")
    markdown = render_markdown(report)
    assert "No labels yet: the judge has not been compared with people" in markdown
    assert "no interval" not in markdown and "Confusion matrix" not in markdown.split("## Win")[0]
    assert "No pair was labelled by two or more people." in markdown
    assert "No labels yet: the kappa curve and the confusion matrix" in render_html(report)


def test_the_header_marks_the_baseline_the_judge_and_an_unverified_price_table():
    report = make_report(judge={"model": CONCISE, "is_contestant": True})
    markdown = render_markdown(report)
    assert "- Contestants: `openai/gpt-4o-mini` (baseline), `anthropic" in markdown
    assert "- Judge: `openai/gpt-4o-mini@concise` (also a contestant)" in markdown
    assert "pinned `2026-11-01` (UNVERIFIED)" in markdown
    report["totals"] |= {"simulated": True}
    assert "(simulated: fake provider)" in render_markdown(report)


def test_the_markdown_leaves_charts_to_the_html():
    report = make_report()
    markdown, page = render_markdown(report), render_html(report)
    assert "<svg" not in markdown and markdown.count("see report.html") == 3
    assert page.count("<svg ") == 3


def test_the_decision_template_closes_the_report():
    markdown = render_markdown(make_report())
    tail = markdown[markdown.index("## Decision") :]
    assert "Decision: adopt / keep / needs more evidence\nRun: 20261130T052720Z_51aa5390\n" in tail
    assert "\nReasoning:\nEvidence: calibration below_floor; " in tail
    assert markdown.endswith("```\n")


def test_the_report_makes_no_recommendation():
    for variant in VARIANTS:
        text = render_markdown(make_report(variant)).lower()
        for word in ("recommend ", "we suggest", "better", "worse", "significant", "winner"):
            assert word not in text, (variant, word)


def test_long_lists_are_cut_with_a_pointer_to_the_files():
    failure = {"task": "t", "case": "c", "repeat": 1, "contestant": CONCISE, "kind": "timeout",
               "message": "x" * 5000}  # fmt: skip
    markdown = render_markdown(make_report(failures=[failure] * 150))
    assert markdown.count("`timeout`") == 100
    assert "50 more not listed here; answers.jsonl has every one." in markdown
    assert "x" * 299 + "\u2026" in markdown and "x" * 300 not in markdown


def test_rendering_is_deterministic():
    assert render_markdown(make_report()) == render_markdown(make_report())
    assert render_html(make_report()) == render_html(make_report())
