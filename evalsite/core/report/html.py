"""report.html: the stored report as one self-contained HTML file (SPEC §11).

Inline CSS, inline SVG charts, no script, no external reference, and a ``<meta>`` CSP that
forbids fetching or running anything, so the file is safe to open from disk even if a
rendering bug let report text through. Text from the report goes through
:func:`evalsite.core.report.text.esc`, this package's own wording through
:func:`html.escape`; attribute values are only ever this module's constants, or an image's
``data:`` URL built here from its bytes (a type from :data:`EMBEDDED_TYPES`, then base64).

The files a run's cases attach come as :class:`Attachment` values (their bytes read by the
caller): a "Files" appendix lists each with its type, size and hash, images up to
:data:`EMBED_MAX_BYTES` shown inline, so the file stays self-contained.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalsite.core.report.charts import confusion_svg, cost_vs_winrate_svg, kappa_curve_svg
from evalsite.core.report.document import (
    Block,
    Cell,
    Chart,
    Code,
    Heading,
    Items,
    Para,
    Pre,
    Section,
    Table,
    cells,
)
from evalsite.core.report.outline import build_document
from evalsite.core.report.text import esc

__all__ = ["CSP", "EMBED_MAX_BYTES", "Attachment", "render_html", "render_sections"]

FIGURE_CHARS = 24
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
EMBED_MAX_BYTES = 2 * 1024 * 1024  # a larger image is listed by name and hash only
EMBEDDED_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
CHARTS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "cost_vs_winrate": cost_vs_winrate_svg,
    "kappa_curve": kappa_curve_svg,
    "confusion": confusion_svg,
}
STYLE = """
:root { --ink: #1f2933; --muted: #52606d; --line: #d9e2ec; --soft: #f5f7fa; }
body { font: 15px/1.5 system-ui, sans-serif; color: var(--ink); margin: 2rem auto;
  max-width: 72rem; padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; border-bottom: 1px solid var(--line);
  padding-bottom: .25rem; margin-top: 2.5rem; } h3 { font-size: 1rem; }
nav { display: flex; flex-wrap: wrap; gap: .25rem 1rem; font-size: .9rem; }
nav a { color: var(--muted); }
code, pre { font: .9em/1.4 ui-monospace, monospace; background: var(--soft);
  overflow-wrap: anywhere; }
pre { padding: .75rem; white-space: pre-wrap; border: 1px solid var(--line); }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: .9rem; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; text-align: left;
  vertical-align: top; }
/* a name wraps at its hyphens, never letter by letter ("anywhere" would let a column
   shrink to one character); a short figure keeps to one line */
td code, th code { overflow-wrap: normal; } td.fig { white-space: nowrap; }
th { background: var(--soft); }
.note { color: var(--muted); font-size: .9rem; }
figure { margin: 1rem 0; } figcaption { color: var(--muted); font-size: .9rem; }
svg { max-width: 100%; height: auto; }
img.attached { max-width: 16rem; max-height: 12rem; border: 1px solid var(--line); }
"""


@dataclass(frozen=True)
class Attachment:
    """One file a case attaches, for the Files appendix: ``data`` is the file's bytes when
    it is an image small enough to embed, else None."""

    task: str
    case: str
    name: str
    path: str
    media_type: str
    size: int
    sha256: str
    data: bytes | None = None


def render_html(report: Mapping[str, Any], attachments: Sequence[Attachment] = ()) -> str:
    document = build_document(report)
    nav, body = render_sections(report)
    if attachments:
        nav += '<a href="#files">Files</a>'
        body += "\n" + _files_section(attachments)
    title = "".join(
        esc(part.text if isinstance(part, Code) else part) for part in cells(document.title)
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"<header><h1>{_inline(document.title)}</h1><nav>{nav}</nav></header>\n"
        f"<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def render_sections(report: Mapping[str, Any]) -> tuple[str, str]:
    """``(nav, sections)``: the report's table of contents and its sections as HTML
    fragments, escaped exactly as in :func:`render_html`, for the run page to embed."""
    document = build_document(report)
    nav = "".join(
        f'<a href="#{esc(section.key)}">{_inline(section.title)}</a>'
        for section in document.sections
    )
    return nav, "\n".join(_section(section, report) for section in document.sections)


def _inline(cell: Cell) -> str:
    # A str part is this package's own wording and numbers: escaped, ":" left readable.
    return "".join(
        f"<code>{esc(part.text)}</code>" if isinstance(part, Code) else html.escape(part)
        for part in cells(cell)
    )


def _td(cell: Cell) -> str:
    # A short figure of ours ("0.880 (n=25)", "[0.434, 0.724]") stays on one line; names
    # and prose wrap at spaces and hyphens, so no column is squeezed to a letter a line.
    if isinstance(cell, str) and len(cell) <= FIGURE_CHARS:
        return f'<td class="fig">{_inline(cell)}</td>'
    return f"<td>{_inline(cell)}</td>"


def _section(section: Section, report: Mapping[str, Any]) -> str:
    blocks = "\n".join(_block(block, report) for block in section.blocks)
    return (
        f'<section id="{esc(section.key)}">\n<h2>{_inline(section.title)}</h2>\n{blocks}\n'
        "</section>"
    )


def _block(block: Block, report: Mapping[str, Any]) -> str:
    match block:
        case Heading(text=text):
            return f"<h3>{_inline(text)}</h3>"
        case Para(text=text, note=note):
            return f'<p class="note">{_inline(text)}</p>' if note else f"<p>{_inline(text)}</p>"
        case Items(items=items):
            return "<ul>" + "".join(f"<li>{_inline(item)}</li>" for item in items) + "</ul>"
        case Table(head=head, rows=rows):
            head_html = "".join(f"<th>{_inline(cell)}</th>" for cell in head)
            rows_html = "".join("<tr>" + "".join(map(_td, row)) + "</tr>" for row in rows)
            return (
                f'<div class="scroll"><table><thead><tr>{head_html}</tr></thead>'
                f"<tbody>{rows_html}</tbody></table></div>"
            )
        case Pre(lines=lines):
            return "<pre>" + "\n".join(esc(line) for line in lines) + "</pre>"
        case Chart(kind=kind, caption=caption):
            svg = CHARTS[kind](report)
            return f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"
    raise TypeError(f"not a report block: {type(block).__name__}")


def _files_section(attachments: Sequence[Attachment]) -> str:
    head = "".join(f"<th>{name}</th>" for name in ("Case", "File", "Type", "Size", "sha256", ""))
    rows = "".join(
        f"<tr><td><code>{esc(a.task)}/{esc(a.case)}</code></td>"
        f"<td><code>{esc(a.name)}</code> {esc(a.path)}</td><td>{esc(a.media_type)}</td>"
        f'<td class="fig">{a.size:,} bytes</td><td><code>{esc(a.sha256)}</code></td>'
        f"<td>{_shown(a)}</td></tr>"
        for a in attachments
    )
    return (
        '<section id="files">\n<h2>Files</h2>\n'
        "<p>The files the cases sent, by the case's name for each, with their hashes.</p>\n"
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
        "</table></div>\n</section>"
    )


def _shown(attachment: Attachment) -> str:
    data, media_type = attachment.data, attachment.media_type
    if media_type not in EMBEDDED_TYPES:
        return ""
    if max(attachment.size, len(data or b"")) > EMBED_MAX_BYTES:
        limit = EMBED_MAX_BYTES // (1024 * 1024)
        return f'<span class="note">over {limit} MiB: not embedded</span>'
    if data is None:
        return '<span class="note">not embedded: the run no longer holds it</span>'
    encoded = base64.b64encode(data).decode("ascii")
    alt = esc(f"{attachment.name} ({media_type})")
    return f'<img class="attached" src="data:{media_type};base64,{encoded}" alt="{alt}">'
