"""Rendering the stored report (report.json, SPEC §11): Markdown, one self-contained HTML
file with inline SVG charts, the CLI summary, and the comparison of two runs.

Every function here takes the report as a plain dict and treats every string in it as
untrusted; see :mod:`evalsite.core.report.text` for how each output keeps it inert.
"""

from evalsite.core.report.charts import confusion_svg, cost_vs_winrate_svg, kappa_curve_svg
from evalsite.core.report.compare import (
    DEFAULT_THRESHOLD,
    Change,
    Comparison,
    Mover,
    compare_reports,
)
from evalsite.core.report.html import render_html
from evalsite.core.report.markdown import render_markdown
from evalsite.core.report.summary import summary_lines

__all__ = [
    "DEFAULT_THRESHOLD", "Change", "Comparison", "Mover", "compare_reports", "confusion_svg",
    "cost_vs_winrate_svg", "kappa_curve_svg", "render_html", "render_markdown", "summary_lines",
]  # fmt: skip
