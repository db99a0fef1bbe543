"""Untrusted text made safe for each output: the terminal, Markdown, HTML and SVG.

Every string in a report may have come from a model, a suite file or a user. Three rules:

- :func:`visible` puts it on one line and shows what would hide or reorder text (control,
  bidi and zero-width characters, lone surrogates) as ``\\uXXXX`` escapes, so two names
  that differ only there look different and nothing reaches a terminal as an escape code.
- :func:`md_code` shows it in Markdown as a code span, which no renderer reads as a link,
  an image, emphasis or HTML. A code span cannot escape anything, so ``<``, ``>`` and
  ``|`` (which would still end a table cell) are shown as look-alikes: the Markdown source
  never holds a tag built from report text.
- :func:`esc` escapes it for HTML and SVG (text and quoted attributes alike, and valid
  XML), and writes ``:`` as a character reference so no URL scheme (``javascript:``,
  ``http://``) appears in the file's source at all.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["esc", "md_code", "md_literal", "visible"]

_SPACES = frozenset("\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_HIDDEN = frozenset({"Cc", "Cf", "Cs"})
_MD_LOOKALIKES = str.maketrans({"<": "\uff1c", ">": "\uff1e", "|": "\u2502"})
_BACKTICKS = re.compile(r"`+")


def visible(value: object, limit: int | None = None) -> str:
    """``value`` as one line of text; at most ``limit`` characters (an ellipsis ends it)."""
    text = "" if value is None else str(value)
    if not (text.isascii() and text.isprintable()):
        text = "".join(_visible_char(char) for char in text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "\u2026"
    return text


def _visible_char(char: str) -> str:
    if char in _SPACES:
        return " "
    code = ord(char)
    if unicodedata.category(char) in _HIDDEN or _noncharacter(code):
        if code < 0x100:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
    return char


def _noncharacter(code: int) -> bool:
    return 0xFDD0 <= code <= 0xFDEF or (code & 0xFFFE) == 0xFFFE


def md_literal(value: object, limit: int | None = None) -> str:
    """Text for inside a Markdown code span or fenced block: one line, no ``<`` ``>`` ``|``."""
    return visible(value, limit).translate(_MD_LOOKALIKES)


def md_code(value: object, limit: int | None = None) -> str:
    """A Markdown code span showing ``value`` literally, in a list, a paragraph or a table."""
    text = md_literal(value, limit)
    if not text:
        return '""'
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    if text[0] in "` " or text[-1] in "` ":
        text = f" {text} "  # a renderer strips one space each side, keeping what we meant
    return f"{fence}{text}{fence}"


def esc(value: object, limit: int | None = None) -> str:
    """HTML/SVG-escaped ``value``, safe as element text and inside a quoted attribute."""
    return html.escape(visible(value, limit), quote=True).replace(":", "&#58;")
