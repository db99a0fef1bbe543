"""A word-level diff of two answers, as the pair page shows it behind a toggle.

Words are compared without their spacing and kept with it: the pieces but the deleted ones
give back the second text exactly, the pieces but the inserted ones the first text's words.
Only the first :data:`MAX_WORDS` words of each side are compared (difflib's matcher grows
with the product of the two lengths): the page says so, nothing is dropped silently.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

MAX_WORDS = 3000
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
    left, right = left[:max_words], right[:max_words]
    matcher = difflib.SequenceMatcher(
        None, [w.strip() for w in left], [w.strip() for w in right], autojunk=False
    )
    pieces: list[Piece] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _add(pieces, "same", "".join(right[j1:j2]))
            continue
        _add(pieces, "del", "".join(left[i1:i2]))
        _add(pieces, "ins", "".join(right[j1:j2]))
    return WordDiff(tuple(pieces), clipped)


def _add(pieces: list[Piece], kind: str, text: str) -> None:
    if not text:
        return
    if pieces and pieces[-1].kind == kind:
        pieces[-1] = Piece(kind, pieces[-1].text + text)
    else:
        pieces.append(Piece(kind, text))
