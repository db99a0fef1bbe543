"""Fenced code blocks in an answer, and the text the text checks read (SPEC §7).

A fence follows CommonMark: a line of at least three backticks or tildes, indented by at
most three spaces, optionally followed by an info string (```` ```python ````); the block
ends at a line holding only a fence of the same character at least as long, and an
unclosed block runs to the end of the answer (a reply cut off at ``max_tokens``). The
fence's indentation is removed from the block's lines, as CommonMark does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FencedBlock", "checked_text", "fenced_blocks"]

_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class FencedBlock:
    """One fenced block: ``language`` is the first word of its info string ("" if none)."""

    language: str
    code: str


def fenced_blocks(text: str) -> list[FencedBlock]:
    """Every fenced block of ``text``, in order."""
    blocks: list[FencedBlock] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = _OPEN.match(lines[index])
        if opening is None or (
            opening["fence"][0] == "`" and "`" in opening["info"]  # inline code, not a fence
        ):
            index += 1
            continue
        body, index = _body(lines, index + 1, opening["fence"], len(opening["indent"]))
        info = opening["info"].strip()
        blocks.append(FencedBlock(info.split()[0].lower() if info else "", body))
    return blocks


def _body(lines: list[str], start: int, fence: str, indent: int) -> tuple[str, int]:
    """The block's text from ``start`` and the index just past its closing fence."""
    closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    body = []
    index = start
    while index < len(lines) and not closing.match(lines[index]):
        line = lines[index]
        strip = len(line) - len(line.lstrip(" "))
        body.append(line[min(strip, indent) :])
        index += 1
    text = "\n".join(body) + ("\n" if body else "")
    return text, index + 1


def checked_text(answer: str) -> str:
    """What equals / contains / not_contains / one_of / regex read: the trimmed answer, or
    the trimmed inside of its first fenced block when it has one."""
    trimmed = answer.strip()
    blocks = fenced_blocks(trimmed)
    return blocks[0].code.strip() if blocks else trimmed
