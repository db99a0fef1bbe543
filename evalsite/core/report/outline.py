"""The sections of a report in SPEC §11's order, calibration first on purpose."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalsite.core.report.appendix import (
    charts_section,
    decision_section,
    failures_section,
    gates_section,
    movers_section,
    reproduce_section,
    warnings_section,
)
from evalsite.core.report.breakdown import per_tag_section, per_task_section, scorecard_section
from evalsite.core.report.document import Code, Context, Document
from evalsite.core.report.matrix_section import matrix_section
from evalsite.core.report.overview import calibration_section, header_section, win_rates_section

__all__ = ["SECTIONS", "build_document"]

SECTIONS = (
    header_section,
    calibration_section,
    win_rates_section,
    matrix_section,
    scorecard_section,
    per_task_section,
    per_tag_section,
    movers_section,
    gates_section,
    failures_section,
    warnings_section,
    charts_section,
    reproduce_section,
    decision_section,
)


def build_document(report: Mapping[str, Any]) -> Document:
    ctx = Context.of(report)
    title = ("evalsite report: run ", Code(report.get("run_id") or ""))
    return Document(title, tuple(section(ctx) for section in SECTIONS))
