"""report.md: the stored report rendered as Markdown (SPEC §11).

Charts are left out (report.html has them). Text from the report file is always inside a
code span or a fenced block (:mod:`evalsite.core.report.text`), so a name, a reason or an
error message cannot become a link, an image or HTML in any Markdown viewer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evalsite.core.report.document import (
    Block,
    Cell,
    Chart,
    Code,
    Heading,
    Items,
    Para,
    Pre,
    Table,
    cells,
)
from evalsite.core.report.outline import build_document
from evalsite.core.report.text import md_code, md_literal

__all__ = ["render_markdown"]

_BACKTICKS = re.compile(r"`+")


def render_markdown(report: Mapping[str, Any]) -> str:
    document = build_document(report)
    lines = [f"# {_inline(document.title)}", ""]
    for section in document.sections:
        lines += [f"## {_inline(section.title)}", ""]
        for block in section.blocks:
            lines += [*_block(block), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _inline(cell: Cell) -> str:
    return "".join(md_code(part.text) if isinstance(part, Code) else part for part in cells(cell))


def _block(block: Block) -> list[str]:
    match block:
        case Heading(text=text):
            return [f"### {_inline(text)}"]
        case Para(text=text):
            return [_inline(text)]
        case Items(items=items):
            return [f"- {_inline(item)}" for item in items]
        case Table(head=head, rows=rows):
            return [
                _row(head),
                "|" + " --- |" * len(head),
                *(_row(row) for row in rows),
            ]
        case Pre(lines=pre_lines):
            literal = [md_literal(line) for line in pre_lines]
            runs = [len(run) for line in literal for run in _BACKTICKS.findall(line)]
            fence = "`" * max(3, max(runs, default=0) + 1)
            return [f"{fence}text", *literal, fence]
        case Chart(caption=caption):
            return [f"{caption}: see report.html."]
    raise TypeError(f"not a report block: {type(block).__name__}")


def _row(row: tuple[Cell, ...]) -> str:
    return "| " + " | ".join(_inline(cell) for cell in row) + " |"
