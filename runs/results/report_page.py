"""What the run page shows of a run's stored report: the summary card, the report's sections
as HTML with their table of contents, and the totals.

Every figure is the stored report's (the one result every face reads); only the work of
reading it is kept. A finished run's report never changes again, so each process reads and
renders it once: on a 100,000-pair run the report is megabytes of JSON (its per-unit
figures and every exclusion), and decoding it and laying out its appendix took most of a
request (docs/performance.md, "Pages on a 100,000-pair run").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsite.core.report.card import Card, summary_card
from evalsite.core.report.html import render_sections
from runs.models import Run
from runs.results.memo import FinishedRunMemo


@dataclass(frozen=True)
class ReportPage:
    card: Card
    nav: str
    html: str
    totals: dict[str, Any]


_PAGES: FinishedRunMemo[ReportPage | None] = FinishedRunMemo()


def report_page(run: Run) -> ReportPage | None:
    """The run page's parts of the run's report; None while it has none. The report is
    read (a run of :meth:`RunQuerySet.for_pages` leaves it unread) only when the parts are
    not kept already."""
    return _PAGES.get(run, lambda: _parts(run.report))


def _parts(report: dict[str, Any] | None) -> ReportPage | None:
    if not report:
        return None
    nav, html = render_sections(report)
    return ReportPage(summary_card(report), nav, html, dict(report.get("totals") or {}))
