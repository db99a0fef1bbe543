"""Hostile text in every string of a report (names, reasons, messages, warnings, task ids,
tags, dict keys) stays inert in report.html, report.md, the charts and the summary."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from evalsite.core.report.charts import confusion_svg, cost_vs_winrate_svg, kappa_curve_svg
from evalsite.core.report.compare import compare_reports
from evalsite.core.report.html import CSP, STYLE, render_html
from evalsite.core.report.markdown import render_markdown
from evalsite.core.report.summary import summary_lines
from tests.helpers.report import VARIANTS, XSS_CORPUS, make_report, outside_code, poisoned

SVG_NS = 'xmlns="http://www.w3.org/2000/svg"'
ALL = "".join(XSS_CORPUS)
PAYLOADS = [*XSS_CORPUS, ALL]

TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "nav", "a", "main",
    "section", "h2", "h3", "p", "ul", "li", "code", "pre", "div", "table", "thead", "tbody",
    "tr", "th", "td", "figure", "figcaption", "svg", "line", "text", "circle", "polygon",
    "polyline", "rect",
}  # fmt: skip
ATTRIBUTES = {
    "lang", "charset", "http-equiv", "content", "name", "href", "id", "class", "xmlns",
    "viewbox", "width", "height", "role", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r",
    "points", "fill", "fill-opacity", "stroke", "stroke-width", "stroke-dasharray",
    "text-anchor", "font-family", "font-size", "transform",
}  # fmt: skip


class _Structure(HTMLParser):
    """Every tag and attribute of a page, as a browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(name, value or "") for name, value in attrs]

    handle_startendtag = handle_starttag

    def handle_comment(self, data):
        self.comments.append(data)

    def unknown_decl(self, data):
        self.comments.append(data)


def structure(page: str) -> _Structure:
    parser = _Structure()
    parser.feed(page)
    parser.close()
    return parser


def _pages() -> list[tuple[str, str]]:
    return [(variant, payload) for variant in VARIANTS for payload in PAYLOADS]


@pytest.mark.parametrize(("variant", "payload"), _pages())
def test_the_html_has_only_its_own_tags_and_attributes(variant, payload):
    page = render_html(poisoned(make_report(variant), payload))
    found = structure(page)
    assert set(found.tags) <= TAGS
    assert found.tags.count("style") == 1 and found.tags.count("svg") == 3
    assert "script" not in found.tags and "img" not in found.tags
    assert {name for name, _ in found.attributes} <= ATTRIBUTES
    assert not [name for name, _ in found.attributes if name.startswith(("on", "hx-"))]
    for name, value in found.attributes:
        if name == "href":
            assert re.fullmatch(r"#[a-z-]+", value)
        if name == "content" and value.startswith("default-src"):
            assert value == CSP
    assert found.comments == []


@pytest.mark.parametrize(("variant", "payload"), _pages())
def test_the_html_source_holds_no_script_handler_or_url(variant, payload):
    page = render_html(poisoned(make_report(variant), payload))
    lowered = page.lower()
    assert "<script" not in lowered and lowered.count("<style") == 1
    assert "javascript:" not in lowered and "data:text" not in lowered
    assert not re.search(r"<[a-z][^>]*\son[a-z]+=", lowered)  # no handler inside any tag
    without_ns = lowered.replace(SVG_NS, "")
    assert "http://" not in without_ns and "https://" not in without_ns
    style = page[page.index("<style>") + 7 : page.index("</style>")]
    assert style == STYLE and "url(" not in style and "@import" not in style
    assert '<meta http-equiv="Content-Security-Policy"' in page
    assert page.encode("utf-8")  # no lone surrogate left to crash a write


def test_the_hostile_text_is_still_shown_as_text():
    page = render_html(poisoned(make_report(), "<b>bold</b> javascript:x"))
    assert "&lt;b&gt;bold&lt;/b&gt; javascript&#58;x" in page


@pytest.mark.parametrize(("variant", "payload"), _pages())
def test_the_markdown_renders_no_link_image_or_html_from_report_text(variant, payload):
    markdown = render_markdown(poisoned(make_report(variant), payload))
    assert "<" not in markdown and ">" not in markdown
    interpreted = outside_code(markdown)
    for syntax in ("![", "](", "://", "javascript", "www.", "{{", "{%", "\x1b", "\u202e", "`"):
        assert syntax not in interpreted, syntax
    headings = [line for line in markdown.splitlines() if line.startswith("#")]
    assert len(headings) == len([h for h in headings if re.match(r"#{1,3} [A-Z\w]", h)])
    assert (
        sum(line.startswith("## ") for line in headings) == 14
    )  # the sections, Gates and Matrix included


@pytest.mark.parametrize("payload", PAYLOADS)
def test_markdown_tables_keep_their_columns(payload):
    lines = render_markdown(poisoned(make_report(), payload)).splitlines()
    tables: list[list[str]] = []
    for previous, line in zip(["", *lines], lines, strict=False):
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
    assert len(tables) >= 6
    for table in tables:
        columns = table[1].count("|")
        assert all(row.count("|") - row.count("\\|") == columns for row in table), table


@pytest.mark.parametrize("payload", PAYLOADS)
def test_the_charts_stay_well_formed_xml(payload):
    report = poisoned(make_report(), payload)
    for chart in (cost_vs_winrate_svg, kappa_curve_svg, confusion_svg):
        root = ET.fromstring(chart(report))  # noqa: S314 - our own output under test
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert not [e for e in root.iter() if e.tag.endswith(("script", "foreignObject", "a"))]
        assert not [name for e in root.iter() for name in e.attrib if name.startswith("on")]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_terminal_lines_carry_no_control_characters(payload):
    report = poisoned(make_report(), payload)
    lines = summary_lines(report) + compare_reports(report, report).lines()
    for line in lines:
        assert not re.search(r"[\x00-\x1f\x7f\u200b\u202e\u2066\ud800]", line), line
