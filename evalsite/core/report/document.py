"""The report as a neutral document: sections of paragraphs, lists, tables and charts.

The Markdown and the HTML renderer walk the same :class:`Document`, so both show the same
sections in the same order (SPEC §11) and differ only in syntax. Text in a document is a
sequence of *parts*: a ``str`` is this module's own wording and numbers; a :class:`Code`
is text from the report file (names, reasons, messages), which every renderer shows
literally and escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Block", "Cell", "Chart", "Code", "Context", "Document", "Heading", "Items", "Para", "Pre",
    "Section", "Table", "cells",
]  # fmt: skip


@dataclass(frozen=True)
class Code:
    """Untrusted text, shown literally (a code span in Markdown, escaped ``<code>`` in HTML)."""

    text: str


Part = str | Code
Cell = Part | tuple[Part, ...]


def cells(cell: Cell) -> tuple[Part, ...]:
    return cell if isinstance(cell, tuple) else (cell,)


@dataclass(frozen=True)
class Para:
    text: Cell
    note: bool = False  # a footnote or an aside, set smaller in HTML


@dataclass(frozen=True)
class Heading:
    text: Cell


@dataclass(frozen=True)
class Items:
    items: tuple[Cell, ...]


@dataclass(frozen=True)
class Table:
    head: tuple[Cell, ...]
    rows: tuple[tuple[Cell, ...], ...]


@dataclass(frozen=True)
class Pre:
    """Preformatted lines, all shown literally (a command, the decision template)."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Chart:
    kind: str  # "cost_vs_winrate" | "kappa_curve" | "confusion"
    caption: str


Block = Para | Heading | Items | Table | Pre | Chart


@dataclass(frozen=True)
class Section:
    key: str  # stable: the HTML id
    title: Cell
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Document:
    title: Cell
    sections: tuple[Section, ...]


def one_contestant(report: Mapping[str, Any]) -> bool:
    """A run of one contestant (evalpin's kind): nothing is paired, so there is no win-rate,
    no calibration and nothing to flag UNCALIBRATED; its checks and pass rates are the run."""
    return len(report.get("contestants") or ()) == 1


@dataclass(frozen=True)
class Context:
    """The report and what every section derives from it the same way."""

    report: Mapping[str, Any]
    eligible: bool
    baseline: str
    contestants: tuple[str, ...]
    candidates: tuple[str, ...]  # the contestants with a win-rate, in contestant order

    @classmethod
    def of(cls, report: Mapping[str, Any]) -> Context:
        contestants = tuple(str(c) for c in report.get("contestants") or ())
        baseline = str(report.get("baseline") or (contestants[0] if contestants else ""))
        win_rates = report.get("win_rates") or {}
        candidates = [c for c in contestants if c in win_rates]
        candidates += [str(c) for c in win_rates if c not in candidates]
        return cls(
            report=report,
            eligible=report.get("headline_eligible") is True,
            baseline=baseline,
            contestants=contestants,
            candidates=tuple(candidates),
        )

    def get(self, key: str) -> Any:
        """A part of the report that is a dict; an empty dict when the report lacks it."""
        value = self.report.get(key)
        return value if value is not None else {}

    @property
    def one_contestant(self) -> bool:
        return len(self.contestants) == 1

    @property
    def dagger(self) -> str:
        """What follows every printed win-rate: a dagger when not headline-eligible."""
        return "" if self.eligible else "\u2020"
