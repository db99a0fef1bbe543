"""A word-level diff of two answers, as the pair page shows it behind a toggle.

Lines are matched first, then the words of each changed run of lines (git's word diff
does the same): difflib's matcher grows with the product of the two lengths, so it only
ever compares short runs. Words are compared without their spacing and kept with it: the
pieces but the deleted ones give back the second text exactly, the pieces but the inserted
ones the first text's words.

Bounded for huge answers: only the first :data:`MAX_WORDS` words of each side are compared
(the page says so), and a changed run longer than :data:`RUN_WORDS` words on a side is
shown as deleted then inserted whole, not word by word.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

MAX_WORDS = 2000
RUN_WORDS = 250
WORD = re.compile(r"\s+|\S+\s*")  # leading whitespace alone, then each word with its spaces


@dataclass(frozen=True)
class Piece:
    """A run of words: ``same`` in both, ``del`` only in the first, ``ins`` only in the second."""

    kind: str
    text: str


@dataclass(frozen=True)
class WordDiff:
    pieces: tuple[Piece, ...]
    clipped: bool  # a side was longer than MAX_WORDS: its rest is not compared

    @property
    def changed(self) -> bool:
        return any(piece.kind != "same" for piece in self.pieces)


def words(text: str) -> list[str]:
    return WORD.findall(text)


def word_diff(old: str, new: str, max_words: int = MAX_WORDS) -> WordDiff:
    """The pieces that turn ``old`` into ``new``, word by word (whitespace is kept with the
    word before it; a change of spacing alone counts as no change)."""
    left, right = words(old), words(new)
    clipped = len(left) > max_words or len(right) > max_words
    left_lines = _lines("".join(left[:max_words]))
    right_lines = _lines("".join(right[:max_words]))
    matcher = difflib.SequenceMatcher(
        None, [_key(line) for line in left_lines], [_key(line) for line in right_lines],
        autojunk=False,
    )  # fmt: skip
    pieces: list[Piece] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _add(pieces, "same", "".join(right_lines[j1:j2]))
        else:
            _words(pieces, words("".join(left_lines[i1:i2])), words("".join(right_lines[j1:j2])))
    return WordDiff(tuple(pieces), clipped)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _key(text: str) -> str:
    return " ".join(text.split())


def _words(pieces: list[Piece], left: list[str], right: list[str]) -> None:
    """A changed run of lines, word by word (whole when it is too long to compare)."""
    if len(left) > RUN_WORDS or len(right) > RUN_WORDS:
        _add(pieces, "del", "".join(left))
        _add(pieces, "ins", "".join(right))
        return
    matcher = difflib.SequenceMatcher(
        None, [w.strip() for w in left], [w.strip() for w in right], autojunk=False
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _add(pieces, "same", "".join(right[j1:j2]))
            continue
        _add(pieces, "del", "".join(left[i1:i2]))
        _add(pieces, "ins", "".join(right[j1:j2]))


def _add(pieces: list[Piece], kind: str, text: str) -> None:
    if not text:
        return
    if pieces and pieces[-1].kind == kind:
        pieces[-1] = Piece(kind, pieces[-1].text + text)
    else:
        pieces.append(Piece(kind, text))
